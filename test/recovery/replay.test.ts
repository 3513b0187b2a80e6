/**
 * Recovery on real Redis and MongoDB: after Redis lost its data a worker restores the counters it
 * needs by itself, above everything issued before; a Redis ahead of MongoDB is refused
 * (STATE_CONFLICT); replay rebuilds every counter from MongoDB without ever lowering cur or max,
 * fences counters it rewrites while workers keep claiming, and restores strict sequences to their last grant.
 */
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { isIddError } from "../../src/core/errors.js";
import type { AllocationConfig } from "../../src/issuing/sources/counter/counter.js";
import { replay } from "../../src/recovery/replay.js";
import { counterKey } from "../../src/redis/keys.js";
import { REPLAY_FENCE } from "../../src/redis/script-args.js";
import { Scripts } from "../../src/redis/scripts.js";
import { defineSequence, type SequenceInput } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { TestAllocators } from "../support/allocator.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { numbers } from "../support/numbers.js";
import { type PrivateRedis, startPrivateRedis } from "../support/private-redis.js";
import { scriptClient } from "../support/redis.js";

const services = inject("services");
const dbName = `replay_${randomUUID().replaceAll("-", "")}`;
const store = new Store(services.mongodbUrl, { dbName });
const queries = new MongoQueries(services.mongodbUrl, dbName);
let server: PrivateRedis;
let redis: Redis;
const config: AllocationConfig = {
  minBlock: 10,
  maxBlock: 1000,
  initialBlock: 50,
  targetBlockMs: 1000,
  prefetchAt: 0.5,
  reserveLowMs: 60_000,
  reserveAheadMs: 120_000,
  minReservation: 500,
};
const allocators = new TestAllocators(() => ({ redis, store, config, flushMs: 20 }));
const allocator = (worker: string) => allocators.worker(worker);
async function sequence(input: Partial<SequenceInput> = {}) {
  const def = defineSequence({ name: `r-${randomUUID()}`, ...input }, new Date());
  await store.createSequence(def);
  return def;
}
const quiet = { settleMs: 0 };

beforeAll(async () => {
  server = await startPrivateRedis();
  redis = scriptClient(server.url);
  await store.ensureIndexes();
});
afterAll(async () => {
  await allocators.close();
  redis.disconnect();
  await server.stop();
  await queries.dropDatabase();
  await store.close();
});

test.each([
  ["restarted empty", () => server.restartEmpty()],
  ["FLUSHALL", () => redis.flushall().then(() => {})],
])("Redis %s: restored by the workers themselves, no operator; numbers continue above all issued", async (_, lose) => {
  const def = await sequence();
  const strict = await sequence({ grantLog: "strict" });
  const a = allocator(`w-${randomUUID()}`);
  const issued = numbers(await a.counter(def, null).take(700)); // more than a reservation: raised at least once
  const issuedStrict = numbers(await a.counter(strict, null).take(120));
  await a.grants.flush();
  await lose();
  // The worker that held blocks may still use those in memory, but it records nothing: its next claim
  // finds the sequence's fence gone and it must take its partition again (a new gen).
  await expect(a.counter(def, null).take(5000)).rejects.toSatisfy((e) => isIddError(e, "WORKER_FENCED"));
  // Under a new gen (the partition taken again, here: another worker), claims restore the counter from MongoDB.
  const b = allocator(`w-${randomUUID()}`);
  b.gen = Date.now() * 1000;
  const after = numbers(await b.counter(def, null).take(10));
  expect(after[0] as bigint).toBeGreaterThan(issued.at(-1) as bigint);
  const afterStrict = numbers(await b.counter(strict, null).take(1));
  expect(afterStrict[0] as bigint).toBeGreaterThan(issuedStrict.at(-1) as bigint);
  expect(afterStrict[0] as bigint).toBeLessThanOrEqual((issuedStrict.at(-1) as bigint) + BigInt(config.maxBlock) * 2n + 1n); // strict: gap ≤ the blocks held
  // A counter never seen before is created fresh.
  const other = await sequence();
  expect(numbers(await b.counter(other, null).take(3))).toEqual([1n, 2n, 3n]);
  expect(await redis.hget(counterKey(def.name, null), "node")).toMatch(/^\w{40}$/);
});

test("a counter ahead of MongoDB (MongoDB lost reservations) is refused with STATE_CONFLICT, not restored; replay resolves it", async () => {
  const def = await sequence();
  const a = allocator(`w-${randomUUID()}`);
  const issued = numbers(await a.counter(def, null).take(30));
  await a.close();
  const key = counterKey(def.name, null);
  const reserved = (await store.getReservation(def.name, null))?.max as bigint;
  // As if MongoDB came back from an old backup and Redis was then written by another primary: Redis
  // holds more than MongoDB reserved, and the counter is suspect.
  await redis.hset(key, "cur", (reserved + 5n).toString(), "max", (reserved + 100n).toString(), "node", "elsewhere");
  const b = allocator(`w-${randomUUID()}`);
  b.gen = Date.now() * 1000;
  await expect(b.counter(def, null).take(1)).rejects.toSatisfy((e) => isIddError(e, "STATE_CONFLICT"));
  expect(await redis.hget(key, "cur")).toBe((reserved + 5n).toString()); // unchanged
  const r = await replay(redis, store, { ...quiet, sequences: [def.name] });
  expect(r.failed).toEqual([]);
  const c = allocator(`w-${randomUUID()}`);
  c.gen = Date.now() * 1000;
  const next = numbers(await c.counter(def, null).take(1));
  expect(next[0] as bigint).toBeGreaterThan(reserved + 5n);
  expect(next[0] as bigint).toBeGreaterThan(issued.at(-1) as bigint);
});

test("replay never lowers cur or max, covers every grant, and keeps MongoDB's reservation ≥ Redis's max (I1, I2, I4)", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        strict: fc.boolean(),
        take: fc.integer({ min: 1, max: 1500 }),
        redisAhead: fc.option(fc.integer({ min: 0, max: 5000 }), { nil: undefined }),
        lose: fc.constantFrom("nothing", "counter", "all"),
      }),
      async ({ strict, take, redisAhead, lose }) => {
        const def = await sequence({ grantLog: strict ? "strict" : "relaxed" });
        const a = allocator(`w-${randomUUID()}`);
        const issued = numbers(await a.counter(def, null).take(take));
        await a.close();
        const key = counterKey(def.name, null);
        if (redisAhead !== undefined) {
          // Redis ahead of what MongoDB says (a raise not yet recorded would break I1; replay must not lower it).
          const cur = BigInt((await redis.hget(key, "cur")) as string) + BigInt(redisAhead);
          await redis.hset(key, "cur", cur.toString(), "max", (cur + 7n).toString());
        }
        if (lose === "counter") await redis.del(key);
        if (lose === "all") await redis.flushall();
        const before = await redis.hgetall(key);
        const r = await replay(redis, store, quiet);
        expect(r.failed).toEqual([]);
        const after = await redis.hgetall(key);
        const [cur, max] = [BigInt(after.cur as string), BigInt(after.max as string)];
        if (before.cur) expect(cur).toBeGreaterThanOrEqual(BigInt(before.cur));
        if (before.max) expect(max).toBeGreaterThanOrEqual(BigInt(before.max));
        expect(cur).toBeGreaterThanOrEqual(issued.at(-1) as bigint);
        expect(max).toBeGreaterThanOrEqual(cur);
        expect((await store.getReservation(def.name, null))?.max as bigint).toBeGreaterThanOrEqual(max);
        // Closed before the next run: left claiming ahead, it would meet that run's replay, which
        // fences every counter MongoDB knows, and restore its counter under replay's fence.
        const b = allocator(`w-${randomUUID()}`);
        const next = numbers(await b.counter(def, null).take(1));
        await b.close();
        expect(next[0] as bigint).toBeGreaterThan(issued.at(-1) as bigint);
      },
    ),
    { numRuns: 25 },
  );
});

test("strict grant log: replay restores cur to the last grant (gap 0); relaxed: to the reservation", async () => {
  const gaps: Record<string, bigint> = {};
  for (const mode of ["strict", "relaxed"] as const) {
    const def = await sequence({ grantLog: mode });
    const a = allocator(`w-${randomUUID()}`);
    const issued = numbers(await a.counter(def, null).take(120));
    await new Promise((r) => setTimeout(r, 200)); // let the prefetch claim finish: its block is granted, then lost
    a.dropSequences([def.name], "partition-lost");
    await a.close();
    const reserved = (await store.getReservation(def.name, null))?.max as bigint;
    const lastGrant = (await queries.grantsOf(def.name, null)).reduce((m, g) => (g.last > m ? g.last : m), 0n);
    await redis.flushall();
    await replay(redis, store, quiet);
    const next = numbers(await allocator(`w-${randomUUID()}`).counter(def, null).take(1))[0] as bigint;
    expect(next).toBe((mode === "strict" ? lastGrant : reserved) + 1n);
    gaps[mode] = next - (issued.at(-1) as bigint) - 1n;
  }
  expect(gaps.strict as bigint).toBeLessThan(gaps.relaxed as bigint);
});

test("replay while workers claim: counters are fenced while rewritten, no number twice, order kept (I5)", async () => {
  const defs = await Promise.all([1, 2, 3].map(() => sequence({ grantLog: "relaxed" })));
  const workers = [allocator(`w-${randomUUID()}`), allocator(`w-${randomUUID()}`)];
  const got = new Map<string, bigint[]>();
  let running = true;
  const load = workers.flatMap((w, i) =>
    defs.map(async (def) => {
      const mine: bigint[] = [];
      got.set(`${i}|${def.name}`, mine);
      while (running) {
        try {
          mine.push(...numbers(await w.counter(def, null).take(7)));
        } catch (e) {
          if (!isIddError(e, "REDIS_FENCED")) throw e;
        }
        await new Promise((r) => setImmediate(r)); // blocks make take() mostly synchronous: let I/O in
      }
    }),
  );
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const r = await replay(redis, store, { settleMs: 20 });
    expect(r.failed).toEqual([]);
  }
  running = false;
  await Promise.all(load);
  for (const def of defs) {
    const all = [...got].filter(([k]) => k.endsWith(def.name)).flatMap(([, v]) => v);
    expect(new Set(all).size).toBe(all.length);
    for (const [k, v] of got)
      if (k.endsWith(def.name)) for (let i = 1; i < v.length; i++) expect(v[i] as bigint).toBeGreaterThan(v[i - 1] as bigint);
  }
});

test("a counter replay fenced while still missing (a first reservation not yet in Redis) is left to replay: claims wait", async () => {
  // The window: a worker recorded a counter's first reservation in MongoDB and has not created it in
  // Redis yet when replay fences it; the worker's claim then finds a hash holding only replay's fence.
  const def = await sequence();
  const scripts = new Scripts(redis);
  const token = `${REPLAY_FENCE}${randomUUID()}`;
  await store.appendReservation({ sequence: def.name, period: null, max: 500n, epoch: 1, worker: "w-gone" });
  expect(await scripts.fenceCounter({ sequence: def.name, period: null, token })).toMatchObject({ cur: null, max: null });
  const w = allocator(`w-${randomUUID()}`);
  const took = w.counter(def, null).take(3);
  await new Promise((r) => setTimeout(r, 500));
  expect(await redis.hget(counterKey(def.name, null), "epoch")).toBe(token); // not taken over by a worker's restore
  await store.appendReservation({ sequence: def.name, period: null, max: 500n, epoch: 2, worker: "replay" });
  expect(await scripts.restoreCounter({ sequence: def.name, period: null, token, cur: 500n, max: 500n, epoch: 2 })).toEqual({
    cur: 500n,
    max: 500n,
  });
  expect(numbers(await took)[0] as bigint).toBeGreaterThan(500n);
});

test("a dry run changes nothing and reports what replay would do", async () => {
  const def = await sequence();
  await allocator(`w-${randomUUID()}`).counter(def, null).take(3);
  await redis.del(counterKey(def.name, null));
  const r = await replay(redis, store, { dryRun: true, sequences: [def.name] });
  expect(r.plans).toHaveLength(1);
  expect(r.plans[0]).toMatchObject({ change: "create", before: { cur: null, max: null } });
  expect(await redis.exists(counterKey(def.name, null))).toBe(0);
  await expect(replay(redis, store, { sequences: ["no-such-sequence"] })).rejects.toSatisfy((e) => isIddError(e, "UNKNOWN_SEQUENCE"));
});
