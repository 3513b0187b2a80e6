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

/**
 * Every query a worker makes per request or per new counter, and those of `idd audit` and the
 * sample retention, by the filter it sends (src/storage/): each is read through an index. A filter
 * FerretDB does not hand SQLite (a range, `$in`, `null`) must come with a string equality that an
 * index starts with, or it reads the whole collection, which only grows.
 */
const RUN_TIME_QUERIES: { what: string; collection: string; filter: Record<string, unknown>; index: RegExp }[] = [
  { what: "a grant written before use, looked up by its claim", collection: "grants", filter: { _id: "claim-1" }, index: /__id_/ },
  { what: "a restore's grants of one sequence", collection: "grants", filter: { sequence: "q-1" }, index: /_counter_/ },
  { what: "a restore's reservations of one sequence", collection: "reservations", filter: { sequence: "q-1" }, index: /_counter_/ },
  { what: "a gapless number's existence", collection: "gapless", filter: { _id: "q-1/-/1" }, index: /__id_/ },
  { what: "a gapless number's settlement", collection: "gapless_settled", filter: { _id: "q-1/-/1" }, index: /__id_/ },
  { what: "gapless counts: every pending number", collection: "gapless", filter: { state: "pending" }, index: /_state_expires/ },
  { what: "gapless counts: the registration's marker", collection: "gapless_counts", filter: { _id: "registered" }, index: /__id_/ },
  { what: "a gapless request's answer", collection: "gapless_requests", filter: { _id: "q-1/r-1" }, index: /__id_/ },
  { what: "audit: a counter's grants", collection: "grants", filter: { sequence: "q-1", period: null }, index: /_counter_/ },
  { what: "audit: a counter's answered runs", collection: "issuance", filter: { sequence: "q-1", period: null }, index: /_counter_/ },
  { what: "audit: a counter's released runs", collection: "releases", filter: { sequence: "q-1", period: null }, index: /_counter_/ },
  { what: "audit: a gapless counter's numbers", collection: "gapless", filter: { sequence: "q-1", period: null }, index: /_counter_/ },
  {
    what: "seq show: a counter's samples of one day",
    collection: "samples",
    filter: { sequence: "q-1", day: "2026-03-20", period: null, at: { $gte: new Date(0) } },
    index: /_sequence_day_at/,
  },
  { what: "sample retention: one day's samples", collection: "samples", filter: { day: "2026-03-20" }, index: /_day/ },
];

test("every run-time query of an append-only collection is read through an index", async ({ skip }) => {
  // Each collection with a few documents, so that SQLite has its table and indexes to plan with.
  const at = new Date("2026-03-20T10:00:00Z");
  await store.appendGrants([{ claim: "claim-1", sequence: "q-1", period: null, first: 1n, last: 10n, epoch: 1, worker: "w", at }]);
  await store.appendReservations([{ sequence: "q-1", period: null, max: 100n, epoch: 1, worker: "w" }]);
  await store.appendIssuance([{ sequence: "q-1", period: null, first: 1n, last: 2n, at, worker: "w" }]);
  await store.appendReleases([{ sequence: "q-1", period: null, first: 3n, last: 3n, at, worker: "w", why: "stopped" }]);
  const gapless = { sequence: "q-1", period: null, requestId: "r-1", worker: "w", issuedAt: at };
  await store.insertGapless([1n, 2n].map((number) => ({ ...gapless, number, expiresAt: at })));
  await store.settleGapless({ sequence: "q-1", period: null, numbers: [1n] }, "confirmed", null, at, "w");
  await store.recordGaplessAnswers([{ ...gapless, ranges: [{ first: 1n, last: 2n }] }]);
  await store.registerGaplessCounter("q-1", null, 1n);
  await store.appendSamples([{ sequence: "q-1", period: null, issued: 5, windowMs: 10_000, worker: "w", at }]);
  expect(await store.sampledRate("q-1", null, new Date(at.getTime() - 60_000), new Date(at.getTime() + 1000))).toBeGreaterThan(0);
  for (const q of RUN_TIME_QUERIES) {
    const { ferretdb, plan } = await queries.queryPlan(q.collection, q.filter);
    if (!ferretdb) skip("not FerretDB");
    expect(plan, q.what).toMatch(new RegExp(`SEARCH \\S+ USING INDEX \\S+${q.index.source}`));
    expect(plan, q.what).not.toMatch(/SCAN/);
  }
});
