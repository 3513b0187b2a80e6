/**
 * Two Redis timelines of one counter, as a network partition of a Sentinel group makes them: worker
 * A keeps claiming on the old primary P, worker B on the promoted replica Q, which never saw A's
 * counter (the same as a replica that missed writes: B restores it from MongoDB). Both share one
 * MongoDB. Redis cannot fence A, since B's fences and epochs live on Q; MongoDB must (design §5.6):
 * a reservation appended under an epoch a restore superseded is refused, so A never raises P past
 * what B's restore started above, and A's next claim restores P above everything B reserved.
 *
 * Before MongoDB refused stale epochs, A raised P's max under epoch 1 after B's restore under
 * epoch 2 and was granted numbers B had issued: the issue saw 1,168 and 2,819 duplicates this way.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { defineSequence } from "../../../../src/sequences/definition.js";
import { Store } from "../../../../src/storage/store.js";
import { TEST_GEN, TestAllocators } from "../../../support/allocator.js";
import { MongoQueries } from "../../../support/mongo-queries.js";
import { numbers } from "../../../support/numbers.js";
import { type PrivateRedis, startPrivateRedis } from "../../../support/private-redis.js";
import { scriptClient } from "../../../support/redis.js";

const services = inject("services");
const dbName = `test_${randomUUID().replaceAll("-", "")}`;
const store = new Store(services.mongodbUrl, { dbName });
const queries = new MongoQueries(services.mongodbUrl, dbName);
let q: PrivateRedis;
const p = scriptClient(services.redisUrl);
let qClient: ReturnType<typeof scriptClient>;
const onP = new TestAllocators(() => ({ redis: p, store }));
const onQ = new TestAllocators(() => ({ redis: qClient, store }));

beforeAll(async () => {
  await store.ensureIndexes();
  q = await startPrivateRedis();
  qClient = scriptClient(q.url);
});

afterAll(async () => {
  await onP.close();
  await onQ.close();
  qClient.disconnect();
  p.disconnect();
  await q.stop();
  await queries.dropDatabase();
  await store.close();
});

test("a worker left on the old primary never gets numbers the promoted side issued: MongoDB refuses its stale epoch", async () => {
  const def = defineSequence({ name: `split-${randomUUID()}` }, new Date());
  await store.createSequence(def);
  const a = onP.worker("side-a").counter(def, null);
  const b = onQ.worker("side-b").counter(def, null, TEST_GEN + 1);
  const got = { a: [] as bigint[], b: [] as bigint[] };
  const take = async (c: typeof a, into: bigint[], n: number) => {
    for (let i = 0; i < n; i++) into.push(...numbers(await c.take(7)));
  };
  await take(a, got.a, 50); // A: counter created on P under epoch 1, 350 numbers
  await take(b, got.b, 600); // B: Q lacks it: restored from MongoDB (epoch 2), then raised under epoch 2
  const epochs = async () => (await store.getReservation(def.name, null))?.epoch;
  expect(await epochs()).toBeGreaterThanOrEqual(2);
  await take(a, got.a, 600); // A runs past P's max: its raise under epoch 1 is refused, P is restored above B's
  await take(b, got.b, 600); // and B's raise under epoch 2 in turn: Q is restored above A's
  await take(a, got.a, 300);
  const all = [...got.a, ...got.b];
  const seen = new Set<bigint>();
  const twice = all.filter((n) => seen.has(n) || !seen.add(n));
  expect(twice.slice(0, 5), `${twice.length} numbers issued on both timelines`).toEqual([]);
  // Each side's numbers still increase (one issuer per side here).
  for (const side of [got.a, got.b]) for (let i = 1; i < side.length; i++) expect(side[i] as bigint).toBeGreaterThan(side[i - 1] as bigint);
  // The refused raises are on record, under epochs behind the one in force when they were appended.
  const records: { epoch: number; at: Date }[] = [];
  for await (const r of store.reservationRecords([def.name])) records.push(r);
  records.sort((x, y) => x.at.getTime() - y.at.getTime());
  const stale = records.filter((r, i) => records.slice(0, i).some((o) => o.epoch > r.epoch));
  expect(stale.length).toBeGreaterThan(0);
});
