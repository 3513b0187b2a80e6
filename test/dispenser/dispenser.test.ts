/**
 * The dispenser on its own, without Kafka, on real Redis and MongoDB: one reply per request in
 * order, numbers strictly increasing across two dispensers that take a partition from each other
 * (G2), a retried requestId answered with the same numbers by the other one (G6), per-request
 * errors with stable codes, and a fenced dispenser publishing nothing.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import pino from "pino";
import { afterAll, expect, inject, test } from "vitest";
import { Allocator } from "../../src/allocation/allocator.js";
import { defineScripts } from "../../src/allocation/scripts.js";
import { Dispenser } from "../../src/dispenser/dispenser.js";
import { Ownership } from "../../src/dispenser/ownership.js";
import type { IdReply } from "../../src/protocol/reply.js";
import type { IdRequest } from "../../src/protocol/request.js";
import { SequenceCache } from "../../src/sequences/cache.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";

const services = inject("services");
const redis = defineScripts(new Redis(services.redisUrl));
const store = new Store(services.mongodbUrl, { dbName: `disp_${randomUUID().replaceAll("-", "")}` });
const allocation = {
  minBlock: 10,
  maxBlock: 1000,
  initialBlock: 100,
  targetBlockMs: 1000,
  prefetchAt: 0.5,
  reserveLowMs: 60_000,
  reserveAheadMs: 120_000,
  minReservation: 1000,
};
const allocators: Allocator[] = [];
const topic = `disp-${randomUUID()}`;

function dispenser(worker: string, autoCreate = false): Dispenser {
  const allocator = new Allocator({
    redis,
    store,
    worker,
    config: allocation,
    clock: Date.now,
    flushMs: 50,
    sampleMs: 60_000,
    onLogError: () => {},
  });
  allocators.push(allocator);
  return new Dispenser({
    allocator,
    ownership: new Ownership(redis, topic, 60_000),
    sequences: new SequenceCache(store, { ttlMs: 1000, clock: Date.now, autoCreate }),
    heartbeatMs: 1000,
    redisTimeoutMs: 2000,
    maxFormatted: 100,
    clock: Date.now,
    logger: pino({ level: "silent" }),
  });
}

const request = (sequence: string, requestId: string, count = 1, deadline: bigint | null = null): IdRequest => ({
  requestId,
  sequence,
  count,
  replyTo: null,
  deadline,
  fields: {},
});
const numbers = (replies: IdReply[]) =>
  replies.flatMap((r) => r.ranges.flatMap((x) => Array.from({ length: Number(x.last - x.first + 1n) }, (_, i) => x.first + BigInt(i))));
const beat = async () => {};

afterAll(async () => {
  await Promise.all(allocators.map((a) => a.close()));
  await store.db.dropDatabase();
  await store.close();
  redis.disconnect();
});

test("replies in request order; numbers increase across a takeover; a retry elsewhere gets the same numbers; a fenced dispenser publishes nothing", async () => {
  const def = defineSequence({ name: `disp-${randomUUID()}` }, new Date());
  await store.createSequence(def);
  const [a, b] = [dispenser("a"), dispenser("b")];
  a.assigned([0]);

  const first = await a.answer(
    0,
    [request(def.name, "r1", 3), request("nobody-defined-this", "r2"), request(def.name, "r3", 1, 1n), request(def.name, "r4", 2)],
    beat,
  );
  expect(first.map((r) => r.error?.code ?? r.status)).toEqual(["OK", "UNKNOWN_SEQUENCE", "DEADLINE_EXCEEDED", "OK"]);
  expect(first.map((r) => r.requestId)).toEqual(["r1", "r2", "r3", "r4"]);
  const fromA = numbers(first);
  expect(fromA).toEqual([...fromA].sort((x, y) => (x < y ? -1 : 1)));
  expect(fromA).toHaveLength(5);

  // The partition moves to b: r1 retried there gets a's numbers; new numbers are above all of a's.
  b.assigned([0]);
  const second = await b.answer(0, [request(def.name, "r1", 3), request(def.name, "r5", 4)], beat);
  expect(second[0]?.ranges).toEqual(first[0]?.ranges);
  expect(numbers([second[1] as IdReply])[0] as bigint).toBeGreaterThan(fromA.at(-1) as bigint);

  // a has not noticed yet: its next batch is fenced at recording; its heartbeat then fails (the
  // group moved on), so nothing it issued is ever returned for publishing.
  const lostPartition = async () => {
    throw new Error("The group is rebalancing");
  };
  // Requests without a requestId are never kept for dedupe, but their batch is fenced all the same.
  await expect(a.answer(0, [request(def.name, ""), request(def.name, "")], lostPartition)).rejects.toThrow(/rebalancing/);
  const r6 = await b.answer(0, [request(def.name, "r6")], beat);
  expect(numbers(r6)[0] as bigint).toBeGreaterThan(numbers([second[1] as IdReply]).at(-1) as bigint);
});

test("auto-created sequences, counts and losing a partition (its unissued blocks are given up)", async () => {
  const d = dispenser("c", true);
  d.assigned([1, 2]);
  const name = `auto-${randomUUID()}`;
  const replies = await d.answer(1, [request(name, "x1", 10), request(name, "x2", 10)], beat);
  expect(numbers(replies)).toEqual(Array.from({ length: 20 }, (_, i) => BigInt(i + 1)));
  expect(await store.getSequence(name)).toMatchObject({ kind: "monotonic", period: "never" });
  const { lost, dropped } = d.assigned([2]);
  expect(lost).toEqual([1]);
  expect(dropped).toBeGreaterThan(0n);
  expect(d.stats).toMatchObject({ numbers: 20, deduped: 0, expired: 0 });
});
