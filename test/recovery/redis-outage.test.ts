/**
 * A Redis that hangs for real (a private redis-server, SIGSTOPped: connections stay open, nothing
 * answers): numbers keep coming from blocks in memory; a take that needs a new block fails with
 * UNAVAILABLE after the command timeout, and the next ones at once; once Redis answers again,
 * claims resume above everything issued.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import type { Range } from "../../src/core/range.js";
import { defineScripts } from "../../src/redis/scripts.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import type { TestAllocator } from "../support/allocator.js";
import { testAllocator } from "../support/allocator.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { failure, numbers } from "../support/numbers.js";
import { type PrivateRedis, startPrivateRedis } from "../support/private-redis.js";

const dbName = `redis_outage_${randomUUID().replaceAll("-", "")}`;
const store = new Store(inject("services").mongodbUrl, { dbName });
const queries = new MongoQueries(inject("services").mongodbUrl, dbName);
let server: PrivateRedis;
let redis: Redis;
let allocator: TestAllocator;

beforeAll(async () => {
  server = await startPrivateRedis();
  redis = defineScripts(new Redis(server.url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 300 }));
  allocator = testAllocator({
    redis,
    store,
    worker: "w1",
    flushMs: 20,
    config: {
      minBlock: 50,
      maxBlock: 50,
      initialBlock: 50,
      targetBlockMs: 60_000,
      prefetchAt: 0,
      reserveLowMs: 1,
      reserveAheadMs: 1,
      minReservation: 1000,
    },
  });
});
afterAll(async () => {
  server.resume();
  await allocator.close();
  redis.disconnect();
  await server.stop();
  await queries.dropDatabase();
  await store.close();
});

test("Redis hung: blocks in memory keep serving, then UNAVAILABLE (fast after the first timeout); claims resume above everything issued", async () => {
  const def = defineSequence({ name: "hung" }, new Date());
  await store.createSequence(def);
  const c = allocator.counter(def, null);
  const issued = numbers(await c.take(10)); // one block of 50 claimed, 40 left in memory
  console.log("AVAILABLE", c.available);

  server.pause();
  for (let i = 0; i < 40; i++) issued.push(...numbers(await c.take(1)));
  const first = await failure(c.take(1));
  expect(first?.code).toBe("UNAVAILABLE");
  expect(first?.message).toMatch(/timed out/i);
  const second = await failure(c.take(1));
  expect(second?.code).toBe("UNAVAILABLE");
  expect(second?.message).toMatch(/Redis unreachable .*no numbers left in memory/);

  server.resume();
  let after: Range[] | undefined;
  for (let i = 0; i < 50 && !after; i++) {
    after = await c.take(1).catch(() => new Promise<undefined>((ok) => setTimeout(() => ok(undefined), 100)));
  }
  expect(after).toBeDefined();
  const next = numbers(after as Range[]);
  expect(next[0] as bigint).toBeGreaterThan(issued.at(-1) as bigint);
  expect(new Set([...issued, ...next]).size).toBe(issued.length + next.length);
}, 60_000);
