/**
 * The stack's FerretDB (SQLite) finds a document by `_id` through the collection's `_id` index, not
 * by scanning it: FerretDB 1.24.2 as released scans, so a worker's every definition lookup,
 * dedupe read and update by `_id` cost time in proportion to the collection (stack/install.ts
 * patches the lookup; this fails on an unpatched build). Skipped on a server that is not FerretDB.
 */
import { afterAll, expect, inject, test } from "vitest";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { ownDatabase } from "../support/workers.js";

const { mongodbUrl } = ownDatabase(inject("services"), "ferret-index");
const store = new Store(mongodbUrl);
const queries = new MongoQueries(mongodbUrl);

afterAll(async () => {
  await queries.dropDatabase();
  await queries.close();
  await store.close();
});

test("a sequence's definition is found by _id through the index, not by a scan", async ({ skip }) => {
  await store.createSequences(Array.from({ length: 50 }, (_, i) => defineSequence({ name: `idx-${i}` }, new Date())));
  const { ferretdb, plan } = await queries.idLookupPlan("sequences", "idx-7");
  if (!ferretdb) skip("not FerretDB");
  expect(plan).toMatch(/SEARCH \S+ USING INDEX \S+__id_/);
  expect(plan).not.toMatch(/SCAN/);
  expect((await store.getSequence("idx-7"))?.name).toBe("idx-7");
});
