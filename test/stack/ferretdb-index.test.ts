/**
 * The stack's FerretDB (SQLite) finds documents through indexes, not by scanning collections.
 * FerretDB 1.24.2 as released scans for everything but `{_id: <string>}`, and even that misses its
 * index, so a worker's every definition lookup, reservation read (every new counter, every raise)
 * and gapless sweep cost time in proportion to all history (stack/install.ts patches both; these
 * fail on an unpatched build). Skipped on a server that is not FerretDB.
 */
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { ownDatabase } from "../support/workers.js";

const { mongodbUrl } = ownDatabase(inject("services"), "ferret-index");
const store = new Store(mongodbUrl);
const queries = new MongoQueries(mongodbUrl);

beforeAll(async () => {
  await store.ensureIndexes();
});

afterAll(async () => {
  await queries.dropDatabase();
  await queries.close();
  await store.close();
});

test("a sequence's definition is found by _id through the index, not by a scan", async ({ skip }) => {
  await store.createSequences(Array.from({ length: 50 }, (_, i) => defineSequence({ name: `idx-${i}` }, new Date())));
  const { ferretdb, plan } = await queries.queryPlan("sequences", { _id: "idx-7" });
  if (!ferretdb) skip("not FerretDB");
  expect(plan).toMatch(/SEARCH \S+ USING INDEX \S+__id_/);
  expect(plan).not.toMatch(/SCAN/);
  expect((await store.getSequence("idx-7"))?.name).toBe("idx-7");
});

test("a counter's reservation in force is read through the counter's index, whatever else is recorded", async ({ skip }) => {
  // 100 counters of no period with 3 raises each (max 1000, 2000, 3000), and a day's counter of the
  // even ones with one reservation (max 500).
  const records = [
    ...Array.from({ length: 300 }, (_, i) => ({ sequence: `res-${i % 100}`, period: null, max: BigInt(1000 * (1 + Math.floor(i / 100))) })),
    ...Array.from({ length: 50 }, (_, i) => ({ sequence: `res-${2 * i}`, period: "20261201", max: 500n })),
  ].map((r) => ({ ...r, epoch: 1, worker: "w" }));
  await store.appendReservations(records);
  for (const filter of [
    { sequence: "res-7", period: null },
    { sequence: "res-8", period: "20261201" },
  ]) {
    const { ferretdb, plan } = await queries.queryPlan("reservations", filter);
    if (!ferretdb) skip("not FerretDB");
    expect(plan, JSON.stringify(filter)).toMatch(/SEARCH \S+ USING INDEX \S+_counter_/);
    expect(plan, JSON.stringify(filter)).not.toMatch(/SCAN/);
  }
  // The same answers as a scan: the patch only narrows what SQLite reads.
  expect((await store.getReservation("res-7", null))?.max).toBe(3000n);
  expect(await store.getReservation("res-7", "20261201")).toBeUndefined();
  expect((await store.getReservation("res-8", "20261201"))?.max).toBe(500n);
  expect((await store.getReservation("res-8", null))?.max).toBe(3000n);
});

test("the gapless sweep's pending numbers are read through their index", async ({ skip }) => {
  const { ferretdb, plan } = await queries.queryPlan("gapless", { state: "pending", expiresAt: { $lt: new Date() } });
  if (!ferretdb) skip("not FerretDB");
  expect(plan).toMatch(/SEARCH \S+ USING INDEX \S+_state_/);
});
