/**
 * Snowflake sequences through the dispenser, on real Redis and MongoDB: two workers (each with its
 * own issuer, so its own leased worker id) issue ids of one sequence at once; every id is unique,
 * each worker's strictly increase, their worker ids differ; a retry gets the same ids; no Redis
 * counter is used.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import pino from "pino";
import { afterAll, expect, inject, test } from "vitest";
import { Allocator } from "../../src/allocation/allocator.js";
import { MARKER_KEY } from "../../src/allocation/keys.js";
import { defineScripts } from "../../src/allocation/scripts.js";
import { Dispenser } from "../../src/dispenser/dispenser.js";
import { Ownership } from "../../src/dispenser/ownership.js";
import type { IdReply } from "../../src/protocol/reply.js";
import type { IdRequest } from "../../src/protocol/request.js";
import { SequenceCache } from "../../src/sequences/cache.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { SnowflakeIssuer } from "../../src/snowflake/issuer.js";
import { decompose } from "../../src/snowflake/layout.js";
import { Store } from "../../src/storage/store.js";

const services = inject("services");
const redis = defineScripts(new Redis(services.redisUrl));
void redis.set(MARKER_KEY, "test", "NX"); // a Redis idd trusts, as a worker finds it after start
const store = new Store(services.mongodbUrl, { dbName: `snow_${randomUUID().replaceAll("-", "")}` });
const allocators: Allocator[] = [];
const issuers: SnowflakeIssuer[] = [];
const topic = `snow-${randomUUID()}`;

function worker(partition: number) {
  const config = {
    minBlock: 10,
    maxBlock: 1000,
    initialBlock: 100,
    targetBlockMs: 1000,
    prefetchAt: 0.5,
    reserveLowMs: 60_000,
    reserveAheadMs: 120_000,
    minReservation: 1000,
  };
  const allocator = new Allocator({
    redis,
    store,
    worker: "s",
    config,
    clock: Date.now,
    flushMs: 50,
    sampleMs: 60_000,
    onLogError: () => {},
  });
  const snowflakes = new SnowflakeIssuer({ redis });
  allocators.push(allocator);
  issuers.push(snowflakes);
  const d = new Dispenser({
    allocator,
    snowflakes,
    ownership: new Ownership(redis, topic, 60_000),
    sequences: new SequenceCache(store, { ttlMs: 1000, clock: Date.now }),
    heartbeatMs: 1000,
    redisTimeoutMs: 2000,
    maxFormatted: 1000,
    clock: Date.now,
    logger: pino({ level: "silent" }),
  });
  d.assigned([partition]);
  return { d, allocator };
}
const ask = (sequence: string, count: number, requestId: string = randomUUID()): IdRequest => ({
  requestId,
  sequence,
  count,
  replyTo: null,
  deadline: null,
  fields: {},
});
const ids = (replies: IdReply[]) =>
  replies.flatMap((r) => r.ranges.flatMap((x) => Array.from({ length: Number(x.last - x.first + 1n) }, (_, i) => x.first + BigInt(i))));

afterAll(async () => {
  await Promise.all(issuers.map((i) => i.close()));
  await Promise.all(allocators.map((a) => a.close()));
  await store.db.dropDatabase();
  await store.close();
  redis.disconnect();
});

test("two workers issue snowflake ids of one sequence at once: all unique, each worker's increasing, different worker ids", async () => {
  const def = defineSequence(
    { name: `snow-${randomUUID()}`, kind: "snowflake", layout: "epoch=2026-01-01T00:00:00Z,workerBits=4,seqBits=8" },
    new Date(),
  );
  expect(def.snowflake).toMatchObject({ epochMs: Date.parse("2026-01-01T00:00:00Z"), timeBits: 41, workerBits: 4, seqBits: 8 });
  await store.createSequence(def);
  const [a, b] = [worker(0), worker(1)];
  const run = async (w: { d: Dispenser }, partition: number) => {
    const out: bigint[] = [];
    for (let i = 0; i < 40; i++)
      out.push(
        ...ids(
          await w.d.answer(
            partition,
            Array.from({ length: 25 }, (_, k) => ask(def.name, 1 + (k % 40))),
            async () => {},
          ),
        ),
      );
    return out;
  };
  const [fromA, fromB] = await Promise.all([run(a, 0), run(b, 1)]);
  const all = [...fromA, ...fromB];
  expect(new Set(all).size).toBe(all.length);
  for (const list of [fromA, fromB]) for (let i = 1; i < list.length; i++) expect(list[i] as bigint).toBeGreaterThan(list[i - 1] as bigint);
  const layout = def.snowflake as NonNullable<typeof def.snowflake>;
  const workerIds = [fromA, fromB].map((list) => new Set(list.map((id) => decompose(layout, id).worker)));
  expect(workerIds.map((s) => s.size)).toEqual([1, 1]);
  expect([...(workerIds[0] as Set<number>)][0]).not.toBe([...(workerIds[1] as Set<number>)][0]);
  const t = decompose(layout, fromA.at(-1) as bigint).time.getTime();
  expect(Math.abs(t - Date.now())).toBeLessThan(60_000); // the time field is now
  expect(a.allocator.stats.redisCalls + b.allocator.stats.redisCalls).toBe(0); // no counter
  const [first] = await a.d.answer(0, [ask(def.name, 3, "same")], async () => {});
  const [again] = await b.d.answer(0, [ask(def.name, 3, "same")], async () => {}); // b took partition 0's token
  expect(again?.ranges).toEqual(first?.ranges);
});

test("snowflake definitions: every layout problem at once; the layout cannot change", () => {
  const now = new Date();
  expect(() =>
    defineSequence({ name: "s", kind: "snowflake", layout: "epoch=2999-01-01,timeBits=50,workerBits=10,seqBits=12,colour=red" }, now),
  ).toThrow(/layout: "colour=red" is not one of[\s\S]*layout: epoch .* is in the future[\s\S]*layout: .*at most 63/);
  const d = defineSequence({ name: "s", kind: "snowflake" }, now);
  expect(d.snowflake?.epochMs).toBe(now.getTime() - (now.getTime() % 86_400_000)); // today, UTC
  expect(() => defineSequence({ name: "s", layout: "seqBits=10" }, now, d)).toThrow(/layout cannot change/);
});
