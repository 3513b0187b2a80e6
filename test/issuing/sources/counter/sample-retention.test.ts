/**
 * Sample retention on the real store: a worker leading request partition 0 deletes the UTC days of
 * samples older than IDD_SAMPLE_RETENTION_DAYS, whole, and nothing else: younger samples, and the
 * audit collections, stay; a rate read over a span of two days reads both.
 */
import pino from "pino";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { SampleRetention } from "../../../../src/issuing/sources/counter/sample-retention.js";
import { Store } from "../../../../src/storage/store.js";
import { MongoQueries } from "../../../support/mongo-queries.js";
import { ownDatabase } from "../../../support/workers.js";

const { mongodbUrl } = ownDatabase(inject("services"), "sample-retention");
const store = new Store(mongodbUrl);
const DAY = 86_400_000;
const now = Date.parse("2026-03-20T00:30:00Z");

beforeAll(async () => {
  await store.ensureIndexes();
});

afterAll(async () => {
  await new MongoQueries(mongodbUrl).dropDatabase();
  await store.close();
});

test("days past the retention are deleted whole; younger samples and grants stay", async () => {
  const sample = (t: number, issued: number) => ({ sequence: "ret", period: null, issued, windowMs: 10_000, worker: "w", at: new Date(t) });
  // 10 days of samples, one an hour, and a grant as old as the oldest.
  await store.appendSamples(Array.from({ length: 240 }, (_, h) => sample(now - 10 * DAY + h * 3_600_000, 1)));
  await store.appendSamples([sample(now - 60_000, 6), sample(now - 40 * 60_000, 6)]); // around midnight: two days
  await store.appendGrants([
    { claim: "ret-old", sequence: "ret", period: null, first: 1n, last: 9n, epoch: 1, worker: "w", at: new Date(now - 10 * DAY) },
  ]);
  const retention = new SampleRetention({ store, retentionDays: 7, clock: () => now, logger: pino({ level: "silent" }) });
  retention.lead(true);
  await retention.run();
  // Deleted: 03-10 through 03-12, which ended more than 7 days ago; kept: 03-13 (it ended within them) and later.
  const rate = await store.sampledRate("ret", null, new Date(now - 50 * 60_000), new Date(now));
  expect(rate).toBeGreaterThan(0); // both samples around midnight, one each side
  expect(await store.sampledRate("ret", null, new Date(now - 10 * DAY), new Date(now - 8 * DAY))).toBeNull();
  expect(await store.sampledRate("ret", null, new Date(now - 8 * DAY), new Date(now - 7 * DAY))).not.toBeNull();
  const grants = [];
  for await (const g of store.grantsInOrder("ret", null)) grants.push(g.id);
  expect(grants).toEqual(["ret-old"]);
  expect(await store.deleteSampleDays(["2026-03-10", "2026-03-11", "2026-03-12"])).toBe(0); // gone already
  expect(await store.deleteSampleDays(["2026-03-13"])).toBe(24);
});
