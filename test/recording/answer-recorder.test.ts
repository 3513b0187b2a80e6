/**
 * Fencing (G2) and dedupe (G6) at the recording step, on real Redis and MongoDB: a worker that lost
 * its partition's token records nothing, the new owner's numbers are all larger than the old one's,
 * and an answer recorded by one worker is what every other worker returns for that requestId.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, expect, inject, test } from "vitest";
import { isIddError } from "../../src/core/errors.js";
import { AnswerRecorder } from "../../src/recording/answer-recorder.js";
import { defineScripts } from "../../src/redis/scripts.js";
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

test("a paused old owner is fenced at recording; the new owner issues only larger numbers; answers are shared", async () => {
  const topic = `own-${randomUUID()}`;
  const def = defineSequence({ name: `own-${randomUUID()}` }, new Date());
  await store.createSequence(def);
  const [zombie, owner] = [new AnswerRecorder(redis, topic, 60_000), new AnswerRecorder(redis, topic, 60_000)];
  const [za, oa] = [allocator("zombie"), allocator("owner")];

  const z = await zombie.token(0, 1);
  expect(z.taken).toBe(true);
  const zRanges = await za.counter(def, null).take(5);
  expect(await zombie.record(0, z.token, 1, [{ sequence: def.name, requestId: "r1", answer: { period: null, ranges: zRanges } }])).toEqual([
    undefined,
  ]);
  const zLate = await za.counter(def, null).take(5); // issued in memory before the pause, not yet recorded

  // The zombie pauses; the partition moves. The new owner takes a newer token and drops its blocks.
  const o = await owner.token(0, 1);
  expect(o.token).not.toBe(z.token);
  oa.dropSequences([def.name]);
  const oRanges = await oa.counter(def, null).take(5);
  expect(oRanges[0]?.first as bigint).toBeGreaterThan(zLate.at(-1)?.last as bigint);
  // r1 retried at the new owner: the zombie's recorded answer, not new numbers.
  expect(await owner.lookup([{ sequence: def.name, requestId: "r1" }])).toEqual([{ period: null, ranges: zRanges }]);
  expect(await owner.record(0, o.token, 1, [{ sequence: def.name, requestId: "r2", answer: { period: null, ranges: oRanges } }])).toEqual([
    undefined,
  ]);

  // The zombie resumes: its smaller numbers are never recorded, so never published.
  await expect(
    zombie.record(0, z.token, 1, [{ sequence: def.name, requestId: "r3", answer: { period: null, ranges: zLate } }]),
  ).rejects.toSatisfy((e) => isIddError(e, "WORKER_FENCED"));
  expect(await owner.lookup([{ sequence: def.name, requestId: "r3" }])).toEqual([undefined]);
  // A race on one requestId: the second recorder is told the first answer.
  expect(
    await owner.record(0, o.token, 1, [
      { sequence: def.name, requestId: "r2", answer: { period: null, ranges: [{ first: 1n, last: 1n }] } },
    ]),
  ).toEqual([{ period: null, ranges: oRanges }]);
});

test("with dedupe off (window 0), ownership is still checked and nothing is kept", async () => {
  const topic = `own-${randomUUID()}`;
  const [a, b] = [new AnswerRecorder(redis, topic, 0), new AnswerRecorder(redis, topic, 0)];
  const ta = await a.token(3, 1);
  await b.token(3, 1);
  const answer = { sequence: "s", requestId: `r-${randomUUID()}`, answer: { period: null, ranges: [{ first: 1n, last: 2n }] } };
  await expect(a.record(3, ta.token, 1, [answer])).rejects.toSatisfy((e) => isIddError(e, "WORKER_FENCED"));
  expect(await b.lookup([answer])).toEqual([undefined]);
});

test("a worker routing by an outgrown partition count records nothing once another took a partition under the larger one", async () => {
  const topic = `own-${randomUUID()}`;
  const [stale, grown] = [new AnswerRecorder(redis, topic, 60_000), new AnswerRecorder(redis, topic, 60_000)];
  const answer = (requestId: string) => ({ sequence: "s", requestId, answer: { period: null, ranges: [{ first: 1n, last: 1n }] } });
  const s = await stale.token(2, 6);
  expect(await stale.record(2, s.token, 6, [answer(`a-${randomUUID()}`)])).toEqual([undefined]);
  // The topic grows to 12 and a worker that knows takes another partition (the sequence's new home).
  await grown.token(8, 12);
  const late = `b-${randomUUID()}`;
  await expect(stale.record(2, s.token, 6, [answer(late)])).rejects.toSatisfy((e) => isIddError(e, "ROUTE_STALE"));
  expect(await grown.lookup([answer(late)])).toEqual([undefined]);
  // Nor can it take a partition under the old count; under the new one it can.
  await expect(stale.token(3, 6)).rejects.toSatisfy((e) => isIddError(e, "ROUTE_STALE"));
  const again = await stale.token(2, 12);
  expect(again.taken).toBe(true);
  expect(await stale.record(2, again.token, 12, [answer(late)])).toEqual([undefined]);
});
