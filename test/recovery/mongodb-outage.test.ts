/**
 * A MongoDB outage for real (a private FerretDB, SIGKILLed and started again on its data): numbers
 * keep coming from reservations already recorded, sequence definitions from the cache; what needs
 * MongoDB fails with UNAVAILABLE, and fails fast once MongoDB is known to be down; when MongoDB is
 * back, every grant buffered meanwhile reaches the audit log, also that of a strict block whose
 * write failed (never used, but its numbers are accounted for).
 */
import type { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { IddError } from "../../src/core/errors.js";
import type { Range } from "../../src/core/range.js";
import type { AllocationConfig } from "../../src/issuing/sources/counter/counter.js";
import { SequenceCache } from "../../src/sequences/cache.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import type { TestAllocator } from "../support/allocator.js";
import { testAllocator } from "../support/allocator.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { failure, numbers } from "../support/numbers.js";
import { type PrivateMongo, startPrivateMongo } from "../support/private-mongo.js";
import { type PrivateRedis, startPrivateRedis } from "../support/private-redis.js";
import { scriptClient } from "../support/redis.js";

let mongo: PrivateMongo;
let redisServer: PrivateRedis;
let redis: Redis;
let store: Store;
let queries: MongoQueries;
let allocator: TestAllocator;
const config: AllocationConfig = {
  minBlock: 10,
  maxBlock: 20,
  initialBlock: 10,
  targetBlockMs: 60_000,
  prefetchAt: 0.5,
  reserveLowMs: 1,
  reserveAheadMs: 1,
  minReservation: 5000,
};

beforeAll(async () => {
  [mongo, redisServer] = await Promise.all([startPrivateMongo(), startPrivateRedis()]);
  redis = scriptClient(redisServer.url);
  store = new Store(mongo.url, { serverSelectionTimeoutMS: 1000, retryMs: 300 });
  await store.ensureIndexes();
  queries = new MongoQueries(mongo.url);
  allocator = testAllocator({ redis, store, worker: "w1", config, flushMs: 20 });
});
afterAll(async () => {
  await allocator?.close().catch(() => {});
  await store?.close();
  await queries?.close();
  redis?.disconnect();
  await Promise.all([mongo?.stop(), redisServer?.stop()]);
});

test("MongoDB down: relaxed counters serve from their reservation, the cache serves stale definitions, the rest fails fast with UNAVAILABLE; grants reach MongoDB after", async () => {
  let now = Date.now();
  const cache = new SequenceCache(store, { ttlMs: 1000, clock: () => now, monotonic: () => now });
  const relaxed = defineSequence({ name: "relaxed" }, new Date());
  const strict = defineSequence({ name: "strict", grantLog: "strict" }, new Date());
  const fresh = defineSequence({ name: "fresh" }, new Date());
  for (const d of [relaxed, strict, fresh]) await store.createSequence(d);
  expect((await cache.get("relaxed"))?.name).toBe("relaxed");
  const r = allocator.counter(relaxed, null);
  const s = allocator.counter(strict, null);
  const issued = numbers(await r.take(5));
  const strictIssued = numbers(await s.take(1));
  await allocator.grants.flush();

  await mongo.kill();
  now += 5000; // the cached definition expired: served anyway, refreshed in the background
  expect((await cache.get("relaxed"))?.name).toBe("relaxed");
  for (let i = 0; i < 100; i++) issued.push(...numbers(await r.take(7))); // 700 numbers: many blocks, one reservation
  expect(allocator.grants.buffered).toBeGreaterThan(0);

  // A counter never reserved needs MongoDB: UNAVAILABLE; the next call does not wait for MongoDB again.
  const first = await failure(allocator.counter(fresh, null).take(1));
  expect(first?.code).toBe("UNAVAILABLE");
  expect(store.down).toBe(true);
  const second = await failure(allocator.counter(fresh, null).take(1));
  expect(second?.code).toBe("UNAVAILABLE");
  expect(second?.message).toMatch(/MongoDB unreachable for \d+ ms; retrying/);
  // A strict counter uses no block whose grant is not in MongoDB: once its block is used up, UNAVAILABLE.
  let strictFailure: IddError | undefined;
  for (let i = 0; i < 50 && !strictFailure; i++) {
    strictFailure = await failure(s.take(1).then((rs) => strictIssued.push(...numbers(rs))));
  }
  expect(strictFailure?.code).toBe("UNAVAILABLE");
  // A sequence the cache never saw cannot be looked up.
  expect((await failure(cache.get("fresh")))?.code).toBe("UNAVAILABLE");

  await mongo.start();
  let back: Range[] | undefined;
  for (let i = 0; i < 100 && !back; i++) {
    back = await allocator
      .counter(fresh, null)
      .take(1)
      .catch(() => new Promise<undefined>((ok) => setTimeout(() => ok(undefined), 100)));
  }
  expect(back?.[0]?.first).toBe(1n);
  issued.push(...numbers(await r.take(3)));
  strictIssued.push(...numbers(await s.take(1)));
  await allocator.grants.flush();
  expect(allocator.grants.buffered).toBe(0);

  // Nothing issued twice, and every number issued lies in a grant recorded in MongoDB.
  for (const [name, all] of [
    ["relaxed", issued],
    ["strict", strictIssued],
  ] as const) {
    expect(new Set(all).size).toBe(all.length);
    const grants = await queries.grantsOf(name, null);
    const uncovered = all.filter((n) => !grants.some((g) => g.first <= n && n <= g.last));
    expect(uncovered).toEqual([]);
  }
  // The strict counter's grants leave no hole: a block whose write failed while MongoDB was down was
  // not used, and its grant was appended once MongoDB was back (idd audit explains it as given up).
  const holes: string[] = [];
  let next = 1n;
  for (const g of (await queries.grantsOf("strict", null)).sort((a, b) => (a.first < b.first ? -1 : 1))) {
    if (g.first > next) holes.push(`${next}..${g.first - 1n}`);
    if (g.last + 1n > next) next = g.last + 1n;
  }
  expect(holes).toEqual([]);
}, 60_000);
