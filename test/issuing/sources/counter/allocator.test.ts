import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import type { AllocationConfig } from "../../../../src/issuing/sources/counter/counter.js";
import { counterKey } from "../../../../src/redis/keys.js";
import { defineSequence } from "../../../../src/sequences/definition.js";
import { Store } from "../../../../src/storage/store.js";
import { SMALL_BLOCKS, TestAllocators } from "../../../support/allocator.js";
import { MongoQueries } from "../../../support/mongo-queries.js";
import { numbers } from "../../../support/numbers.js";
import { scriptClient } from "../../../support/redis.js";

const services = inject("services");
const redis = scriptClient(services.redisUrl);
const dbName = `test_${randomUUID().replaceAll("-", "")}`;
const store = new Store(services.mongodbUrl, { dbName });
const queries = new MongoQueries(services.mongodbUrl, dbName);
const config: AllocationConfig = { ...SMALL_BLOCKS, minBlock: 50, maxBlock: 2000 };
const allocators = new TestAllocators(() => ({ redis, store, config }));
const allocator = (worker: string) => allocators.worker(worker);

beforeAll(() => store.ensureIndexes());
afterAll(async () => {
  await allocators.close();
  await queries.dropDatabase();
  await store.close();
  redis.disconnect();
});

function assertStrictlyIncreasing(all: bigint[]): void {
  for (let i = 1; i < all.length; i++) {
    if ((all[i] as bigint) <= (all[i - 1] as bigint)) throw new Error(`order violated at ${i}: ${all[i - 1]} then ${all[i]}`);
  }
}

test("one worker: numbers start at the start value, are contiguous and strictly increasing, ranges merged", async () => {
  const def = defineSequence({ name: `m-${randomUUID()}`, start: 1_000_000 }, new Date());
  await store.createSequence(def);
  const c = allocator("w1").counter(def, null);
  const issued: bigint[] = [];
  for (let i = 0; i < 300; i++) {
    const ranges = await c.take((i % 7) + 1);
    expect(ranges.length).toBeLessThanOrEqual(2);
    issued.push(...numbers(ranges));
  }
  const big = await c.take(5000); // bigger than any block: still at most two ranges
  expect(big.length).toBeLessThanOrEqual(2);
  issued.push(...numbers(big));
  assertStrictlyIncreasing(issued);
  expect(issued[0]).toBe(1_000_000n);
  expect(issued.at(-1)).toBe(1_000_000n + BigInt(issued.length) - 1n); // one worker, no failover: no gaps
});

test("prepare claims what a step needs ahead, at most one block beyond take's, and issuing from it is unchanged", async () => {
  const def = defineSequence({ name: `prep-${randomUUID()}`, start: 10 }, new Date());
  await store.createSequence(def);
  const a = allocator("w-prep");
  const c = a.counter(def, null);
  await c.prepare(1_000_000); // far more than a block: at most maxBlock (G4's gap bound), and within the first reservation
  const held = c.available;
  expect(held).toBeGreaterThan(0n);
  expect(held).toBeLessThanOrEqual(BigInt(config.maxBlock));
  const calls = a.stats.redisCalls;
  await c.prepare(Number(held)); // already in memory: no claim
  expect(a.stats.redisCalls).toBe(calls);
  const first = c.takeNow(Number(held)); // all of it without waiting, from the start value on
  expect(first && numbers(first)).toEqual(Array.from({ length: Number(held) }, (_, i) => 10n + BigInt(i)));
  const after = numbers(await c.take(3));
  expect(after[0]).toBeGreaterThan(9n + held);
  assertStrictlyIncreasing(after);
  await a.grants.flush();
  const grants = await queries.grantsOf(def.name, null);
  expect(grants[0]?.first).toBe(10n);
  expect(grants[0]?.last).toBe(9n + held);
});

test("Redis and MongoDB round trips are bounded by blocks, not numbers (counted)", async () => {
  const def = defineSequence({ name: `io-${randomUUID()}` }, new Date());
  await store.createSequence(def);
  const a = allocator("w-io");
  const c = a.counter(def, null);
  const redisBefore = a.stats.redisCalls;
  const writesBefore = store.stats.writes;
  const readsBefore = store.stats.reads;
  const n = 20_000;
  for (let i = 0; i < n; i++) await c.take(1);
  await a.grants.flush();
  const perThousand = (x: number) => (x * 1000) / n;
  // With blocks of at least 50 numbers, at most 20 claims per 1,000 numbers plus reservation raises.
  expect(perThousand(a.stats.redisCalls - redisBefore)).toBeLessThanOrEqual(1000 / config.minBlock + 2);
  expect(perThousand(store.stats.writes - writesBefore)).toBeLessThanOrEqual(5);
  expect(perThousand(store.stats.reads - readsBefore)).toBeLessThanOrEqual(2);
  const grants = await queries.grantsOf(def.name, null);
  expect(grants.reduce((s, g) => s + Number(g.last - g.first + 1n), 0)).toBeGreaterThanOrEqual(n);
});

test("two workers claiming the same counter at once never get the same number; Redis max stays ≤ MongoDB's (I1)", async () => {
  const def = defineSequence({ name: `dup-${randomUUID()}`, kind: "daily", timeZone: "Asia/Shanghai" }, new Date());
  await store.createSequence(def);
  const [c1, c2] = [allocator("w-a").counter(def, "20261121"), allocator("w-b").counter(def, "20261121")];
  const got: bigint[][] = [[], []];
  await Promise.all(
    [c1, c2].map(async (c, i) => {
      for (let k = 0; k < 400; k++) (got[i] as bigint[]).push(...numbers(await c.take((k % 5) + 1)));
    }),
  );
  for (const g of got) assertStrictlyIncreasing(g);
  const all = [...(got[0] as bigint[]), ...(got[1] as bigint[])];
  expect(new Set(all).size).toBe(all.length);
  // Background prefetches may still claim and raise: wait for them, then read cur and max in one
  // command and MongoDB's reservation after it (MongoDB is raised first, so it can only be ahead).
  await Promise.all([c1, c2].map((c) => c.idle()));
  const [max, cur] = (await redis.hmget(counterKey(def.name, "20261121"), "max", "cur")).map((v) => BigInt(v as string)) as [
    bigint,
    bigint,
  ];
  const reservation = await store.getReservation(def.name, "20261121");
  expect(max).toBeLessThanOrEqual(reservation?.max as bigint);
  expect(cur).toBeLessThanOrEqual(max);
});

test("dropping a counter gives up its unissued blocks for good: the next owner issues only larger numbers", async () => {
  const def = defineSequence({ name: `drop-${randomUUID()}` }, new Date());
  await store.createSequence(def);
  const old = allocator("w-old");
  const before = numbers(await old.counter(def, null).take(10));
  const lost = old.dropSequences([def.name], "partition-lost");
  expect(lost).toBeGreaterThan(0n);
  const after = numbers(await allocator("w-new").counter(def, null).take(10));
  expect(after[0] as bigint).toBeGreaterThan((before.at(-1) as bigint) + lost);
});

test("a daily sequence's next day ends the earlier day's counter: it is dropped, and that day never reuses its numbers", async () => {
  const def = defineSequence({ name: `day-${randomUUID()}`, kind: "daily", start: 1 }, new Date());
  await store.createSequence(def);
  const a = allocator("w-days");
  const day1 = a.counter(def, "20261121");
  const first = numbers(await day1.take(5));
  expect(first[0]).toBe(1n);
  expect(numbers(await a.counter(def, "20261122").take(1))).toEqual([1n]); // a new day restarts at start
  await expect(day1.take(1)).rejects.toMatchObject({ code: "INTERNAL" }); // dropped
  expect(a.stats.dropped).toBeGreaterThan(0n);
  const again = numbers(await a.counter(def, "20261121").take(1)); // the clock went back: above, not reused
  expect(again[0] as bigint).toBeGreaterThan(first.at(-1) as bigint);
  expect(numbers(await a.counter(def, "20261122").take(1))).toEqual([2n]); // the later day is kept
});

test("a sequence at its maxValue answers SEQUENCE_EXHAUSTED instead of going past it", async () => {
  const def = defineSequence({ name: `cap-${randomUUID()}`, start: 1, maxValue: 120 }, new Date());
  await store.createSequence(def);
  const c = allocator("w-cap").counter(def, null);
  expect(numbers(await c.take(120)).at(-1)).toBe(120n);
  await expect(c.take(1)).rejects.toMatchObject({ code: "SEQUENCE_EXHAUSTED" });
});
