/**
 * SequenceCatalog (idd's library): thousands of definitions from a Node service in one call, in
 * chunks with progress; a name defined already is left as it is; one bad input creates nothing.
 */
import { randomUUID } from "node:crypto";
import { afterAll, expect, inject, test } from "vitest";
import { SequenceCatalog } from "../../src/index.js";
import { Store } from "../../src/storage/store.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { ownDatabase } from "../support/workers.js";

const { mongodbUrl } = ownDatabase(inject("services"), "catalog");
const catalog = SequenceCatalog.connect({ mongodbUrl });
const store = new Store(mongodbUrl);

afterAll(async () => {
  await catalog.close();
  await store.close();
  await new MongoQueries(mongodbUrl).dropDatabase();
});

test("2,500 tenants' invoice series in one call: defaults under each, progress per chunk, the one defined already left as it was", async () => {
  const run = randomUUID().slice(0, 8);
  const names = Array.from({ length: 2500 }, (_, i) => `inv-${run}-${i}`);
  await catalog.create([{ name: names[0] as string, kind: "monotonic", start: 7 }]);
  const progress: [number, number][] = [];
  const r = await catalog.create(
    names.map((name, i) => (i === 5 ? { name, start: 500 } : { name })),
    { defaults: { kind: "formatted", format: "INV-{yy}{MM}-{seq:6}" }, progress: (done, total) => progress.push([done, total]) },
  );
  expect(r).toEqual({ created: 2499, existing: [names[0]] });
  expect(progress).toEqual([
    [1000, 2500],
    [2000, 2500],
    [2500, 2500],
  ]);
  const defined = (await store.listSequences()).filter((d) => d.name.startsWith(`inv-${run}-`));
  expect(defined).toHaveLength(2500);
  const off = defined.filter((d) => {
    if (d.name === names[0]) return d.kind !== "monotonic" || d.start !== 7n;
    return d.kind !== "formatted" || d.format !== "INV-{yy}{MM}-{seq:6}" || d.start !== (d.name === names[5] ? 500n : 1n);
  });
  expect(off.map((d) => d.name)).toEqual([]);
});

test("one input that is not a definition rejects with SEQUENCE_INVALID naming it, and nothing is created", async () => {
  const run = randomUUID().slice(0, 8);
  const good = `good-${run}`;
  await expect(catalog.create([{ name: good }, { name: "no spaces allowed" }, { name: good }])).rejects.toMatchObject({
    code: "SEQUENCE_INVALID",
    message: expect.stringMatching(
      /^SequenceCatalog\.create: 2 of 3 inputs are not sequence definitions; nothing was created:\ninput 2 \("no spaces allowed"\): name must be .*\ninput 3: "good-\w+" is defined on input 1 already$/,
    ),
  });
  expect(await store.getSequence(good)).toBeUndefined();
});
