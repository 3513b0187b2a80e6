/**
 * Fencing (G2, design I3) and dedupe (G6) at the recording step, on real Redis and MongoDB: a worker
 * superseded by a newer gen's claim records nothing, the new issuer's numbers are all larger than the
 * old one's, and an answer recorded by one worker is what every other worker returns for that requestId.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, expect, inject, test } from "vitest";
import { isIddError } from "../../src/core/errors.js";
import { Ownership } from "../../src/ownership/ownership.js";
import { AnswerRecorder } from "../../src/recording/answer-recorder.js";
import { fenceKey, snowflakeHighKey } from "../../src/redis/keys.js";
import { defineScripts, Scripts } from "../../src/redis/scripts.js";
import type { Answer } from "../../src/redis/stored-answer.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { TestAllocators } from "../support/allocator.js";
import { MongoQueries } from "../support/mongo-queries.js";

const services = inject("services");
const redis = defineScripts(new Redis(services.redisUrl));
const dbName = `own_${randomUUID().replaceAll("-", "")}`;
const store = new Store(services.mongodbUrl, { dbName });
const queries = new MongoQueries(services.mongodbUrl, dbName);
const allocators = new TestAllocators(() => ({ redis, store }));
const allocator = (worker: string) => allocators.worker(worker);
afterAll(async () => {
  await allocators.close();
  await queries.dropDatabase();
  await store.close();
  redis.disconnect();
});

/**
 * A worker's partition leases (src/ownership/) and its recorder, as its dispenser uses them: a
 * fenced record revokes the partition's lease, which is taken again at the next gen.
 */
function worker(topic: string, windowMs: number) {
  const ownership = new Ownership(redis, topic);
  const recorder = new AnswerRecorder(redis, windowMs);
  return {
    gen: (partition: number, partitions: number) => ownership.take(ownership.lease(partition), partitions),
    partitionsInForce: () => ownership.partitionsInForce(),
    record: (partition: number, gen: number, sequences: string[], answers: Answer[]) =>
      recorder.record(gen, sequences, answers).catch((e: unknown) => {
        if (isIddError(e, "WORKER_FENCED")) ownership.revoke(ownership.lease(partition), "fenced");
        throw e;
      }),
    lookup: recorder.lookup.bind(recorder),
  };
}

const answerOf = (sequence: string, requestId: string, ranges: { first: bigint; last: bigint }[]) => ({
  sequence,
  requestId,
  answer: { period: null, ranges },
});

test("a paused old owner is fenced at recording once the new owner claimed; the new owner issues only larger numbers; answers are shared", async () => {
  const topic = `own-${randomUUID()}`;
  const def = defineSequence({ name: `own-${randomUUID()}` }, new Date());
  await store.createSequence(def);
  const [zombie, owner] = [worker(topic, 60_000), worker(topic, 60_000)];
  const [za, oa] = [allocator("zombie"), allocator("owner")];

  const z = await zombie.gen(0, 1);
  expect(z.taken).toBe(true);
  za.gen = z.gen;
  const zRanges = await za.counter(def, null).take(5);
  expect(await zombie.record(0, z.gen, [def.name], [answerOf(def.name, "r1", zRanges)])).toEqual([undefined]);
  const zLate = await za.counter(def, null).take(5); // issued in memory before the pause, not yet recorded

  // The zombie pauses; the partition moves. The new owner takes a newer gen and claims under it.
  const o = await owner.gen(0, 1);
  expect(o.gen).toBeGreaterThan(z.gen);
  oa.gen = o.gen;
  const oRanges = await oa.counter(def, null).take(5);
  expect(oRanges[0]?.first as bigint).toBeGreaterThan(zLate.at(-1)?.last as bigint);
  // r1 retried at the new owner: the zombie's recorded answer, not new numbers.
  expect(await owner.lookup([{ sequence: def.name, requestId: "r1" }])).toEqual([{ period: null, ranges: zRanges }]);
  expect(await owner.record(0, o.gen, [def.name], [answerOf(def.name, "r2", oRanges)])).toEqual([undefined]);

  // The zombie resumes: its smaller numbers are never recorded, so never published; nor can it claim.
  await expect(zombie.record(0, z.gen, [def.name], [answerOf(def.name, "r3", zLate)])).rejects.toSatisfy((e) =>
    isIddError(e, "WORKER_FENCED"),
  );
  await expect(za.counter(def, null).take(5000)).rejects.toSatisfy((e) => isIddError(e, "WORKER_FENCED"));
  expect(await owner.lookup([{ sequence: def.name, requestId: "r3" }])).toEqual([undefined]);
  // A race on one requestId: the second recorder is told the first answer.
  expect(await owner.record(0, o.gen, [def.name], [answerOf(def.name, "r2", [{ first: 1n, last: 1n }])])).toEqual([
    { period: null, ranges: oRanges },
  ]);
});

test("with dedupe off (window 0), the fence is still checked and nothing is kept; lookups span sequences", async () => {
  const topic = `own-${randomUUID()}`;
  const def = defineSequence({ name: `own-${randomUUID()}` }, new Date());
  await store.createSequence(def);
  const [a, b] = [worker(topic, 0), worker(topic, 0)];
  const ga = await a.gen(3, 1);
  const wa = allocator("a");
  wa.gen = ga.gen;
  const ranges = await wa.counter(def, null).take(2);
  const gb = await b.gen(3, 1);
  const wb = allocator("b");
  wb.gen = gb.gen;
  await wb.counter(def, null).take(1);
  const answer = answerOf(def.name, `r-${randomUUID()}`, ranges);
  await expect(a.record(3, ga.gen, [def.name], [answer])).rejects.toSatisfy((e) => isIddError(e, "WORKER_FENCED"));
  expect(await b.lookup([answer])).toEqual([undefined]);
  // Dedupe on: one lookup over answers of several sequences (one MGET per sequence's slot).
  const c = worker(topic, 60_000);
  const other = `own-${randomUUID()}`;
  const x = answerOf(def.name, "x", [{ first: 5n, last: 5n }]);
  const y = answerOf(other, "y", [{ first: 7n, last: 7n }]);
  const gc = await c.gen(4, 1);
  await expect(c.record(4, gc.gen, [def.name, other], [x, y])).rejects.toSatisfy((e) => isIddError(e, "WORKER_FENCED")); // no claim under gc yet
  await redis.hset(`{seq:${other}}:fence`, "gen", String(gc.gen), "node", await node());
  await redis.hset(`{seq:${def.name}}:fence`, "gen", String(gc.gen), "node", await node());
  expect(await c.record(4, gc.gen, [def.name, other], [x, y])).toEqual([undefined, undefined]);
  expect(await c.lookup([y, { sequence: def.name, requestId: "none" }, x])).toEqual([y.answer, undefined, x.answer]);
});

/** The Redis node identity scripts compare with. */
async function node(): Promise<string> {
  return /master_replid:(\w+)/.exec(await redis.info("replication"))?.[1] as string;
}

test("a worker routing by an outgrown partition count is fenced once the sequence's new home claimed it, and gets no gen under the old count", async () => {
  const topic = `own-${randomUUID()}`;
  const def = defineSequence({ name: `own-${randomUUID()}` }, new Date());
  await store.createSequence(def);
  const [stale, grown] = [worker(topic, 60_000), worker(topic, 60_000)];
  const [ws, wg] = [allocator("stale"), allocator("grown")];
  const s = await stale.gen(2, 6);
  ws.gen = s.gen;
  const first = await ws.counter(def, null).take(1);
  expect(await stale.record(2, s.gen, [def.name], [answerOf(def.name, `a-${randomUUID()}`, first)])).toEqual([undefined]);
  const late = await ws.counter(def, null).take(1);
  // The topic grows to 12 and a worker that knows takes the sequence's new home and claims it.
  const g = await grown.gen(8, 12);
  wg.gen = g.gen;
  const moved = await wg.counter(def, null).take(1);
  expect(moved[0]?.first as bigint).toBeGreaterThan(late[0]?.last as bigint);
  const lateId = `b-${randomUUID()}`;
  await expect(stale.record(2, s.gen, [def.name], [answerOf(def.name, lateId, late)])).rejects.toSatisfy((e) =>
    isIddError(e, "WORKER_FENCED"),
  );
  expect(await grown.lookup([{ sequence: def.name, requestId: lateId }])).toEqual([undefined]);
  // Fenced, it takes its partition again: refused under the old count (it learns the new one); under the new one it can.
  await expect(stale.gen(2, 6)).rejects.toSatisfy((e) => isIddError(e, "ROUTE_STALE"));
  expect(await stale.partitionsInForce()).toBe(12);
  const again = await stale.gen(2, 12);
  expect(again.taken).toBe(true);
  expect(again.gen).toBeGreaterThan(g.gen);
});

test("a step far larger than the default: 100,000 answers, 90,000 of one sequence, recorded in several calls and returned in order", async () => {
  const scripts = new Scripts(redis);
  const topic = `own-${randomUUID()}`;
  const gen = await scripts.takeOwner({ topic, partitions: 1 });
  const names = Array.from({ length: 11 }, () => `big-${randomUUID()}`);
  for (const s of names) await scripts.fenceSnowflake({ sequence: s, gen });
  // The first sequence alone names 90,002 keys (once a stack overflow: the call's arguments were spread).
  const answers = Array.from({ length: 100_000 }, (_, i) =>
    answerOf(names[i < 90_000 ? 0 : 1 + (i % 10)] as string, `r${i}`, [{ first: BigInt(i), last: BigInt(i) }]),
  );
  const recorder = new AnswerRecorder(redis, 60_000);
  expect((await recorder.record(gen, names, answers)).every((r) => r === undefined)).toBe(true);
  const again = await recorder.record(
    gen,
    names,
    answers.map((a) => ({ ...a, answer: { period: null, ranges: [] } })),
  );
  expect(again.map((r) => r?.ranges[0]?.first)).toEqual(answers.map((_, i) => BigInt(i)));
  for (const s of names) await redis.del(fenceKey(s), snowflakeHighKey(s));
});
