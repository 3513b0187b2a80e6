/**
 * Routine rebalances under load send no reply twice (issue #30): workers join and one leaves while
 * a raw producer keeps every request partition busy, and every correlation id gets exactly one
 * reply. A stopping worker's last offsets were dropped (kafkajs's consumer commits nothing once its
 * stop began, and says so only at debug), so the next owner answered those records again: the same
 * numbers (G6), but a second reply, which a client that keeps one pending entry per correlation id
 * cannot take (6 of 9,520 in one run). The consumer now commits through its group, and its group
 * waits for those commits before it joins or leaves. Every reply on the topic is read and counted.
 */
import { randomUUID } from "node:crypto";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { ServedAdmin } from "../../stack/kafka-admin.js";
import { waitFor } from "../support/wait.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker, type WorkerProcess } from "../support/workers.js";

const services = ownDatabase(inject("services"), "rebreplies");
const run = randomUUID().slice(0, 8);
const topic = `rebreplies.${run}.requests`;
const replyTopic = `rebreplies.${run}.replies`;
const PARTITIONS = 4;
const sequences = Array.from({ length: 8 }, (_, i) => `rebreplies-${run}-${i}`);
const env = {
  ...serviceEnv(services),
  IDD_REQUEST_TOPIC: topic,
  IDD_DLQ_TOPIC: `rebreplies.${run}.dlq`,
  IDD_GROUP_ID: `rebreplies-${run}`,
  IDD_REQUEST_PARTITIONS: String(PARTITIONS),
};
const workers: WorkerProcess[] = [];
const store = new Store(services.mongodbUrl);
const admin = new ServedAdmin(services.kafkaBrokers);
const kafka = new Kafka({ clientId: "rebreplies", brokers: services.kafkaBrokers, logLevel: logLevel.NOTHING });
const producer = kafka.producer();
const consumer = kafka.consumer({ groupId: `rebreplies-replies-${run}`, maxWaitTimeInMs: 50 });
/** Per correlation id, every reply: its sequence and numbers ("seq:first-last"), or its status. */
const replies = new Map<string, string[]>();
let replyCount = 0;

beforeAll(async () => {
  for (const s of sequences) await store.createSequence(defineSequence({ name: s }, new Date()));
  await admin.createTopics([{ topic: replyTopic, partitions: 1 }]);
  await producer.connect();
  await consumer.connect();
  await consumer.subscribe({ topic: replyTopic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      const id = String(message.headers?.kafka_correlationId);
      const r = JSON.parse(String(message.value)) as { sequence: string; status: string; ranges: { first: number; last: number }[] };
      const answer = r.status === "OK" ? r.ranges.map((g) => `${r.sequence}:${g.first}-${g.last}`).join(",") : r.status;
      replies.set(id, [...(replies.get(id) ?? []), answer]);
      replyCount++;
    },
  });
  workers.push(startWorker("rebreplies-w1", env));
  await workers[0]?.assigned;
}, 120_000);

afterAll(async () => {
  await consumer.disconnect().catch(() => {});
  await producer.disconnect().catch(() => {});
  await Promise.all(workers.map((w) => stopWorker(w)));
  await admin.close();
  await store.close();
});

test("workers joining and leaving under load answer every request exactly once", async () => {
  let sent = 0;
  let loading = true;
  const load = (async () => {
    while (loading) {
      const messages = Array.from({ length: 16 }, () => {
        const sequence = sequences[sent % sequences.length] as string;
        const id = `c${sent++}`;
        return {
          key: sequence,
          value: JSON.stringify({ requestId: `${run}-${id}`, sequence, count: 1 }),
          headers: { kafka_correlationId: id, kafka_replyTopic: replyTopic },
        };
      });
      await producer.send({ topic, acks: -1, messages });
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const rebalances: string[] = [];
  await pause(2000);
  for (const id of ["rebreplies-w2", "rebreplies-w3"]) {
    const w = startWorker(id, env);
    workers.push(w);
    await w.assigned;
    rebalances.push(`${id} joined`);
    await pause(2500);
  }
  await stopWorker(workers[0] as WorkerProcess);
  rebalances.push("rebreplies-w1 left");
  await pause(2500);
  loading = false;
  await load;
  await waitFor(`a reply to each of ${sent} requests`, () => replies.size >= sent, { timeoutMs: 60_000 });
  await pause(1000); // a second reply would come after the first: give it the time to
  const twice = [...replies].filter(([, r]) => r.length > 1);
  expect(sent).toBeGreaterThan(1000);
  expect(
    twice.length,
    `${twice.length} of ${sent} answered more than once over ${rebalances.join(", ")}: ${JSON.stringify(twice.slice(0, 5))}`,
  ).toBe(0);
  expect(replyCount).toBe(sent);
  // Every request got one number, and none went to two requests of a sequence.
  const answers = [...replies.values()].map((r) => r[0] as string);
  expect(answers.filter((a) => !/^[^:]+:(\d+)-\1$/.test(a))).toEqual([]);
  expect(new Set(answers).size).toBe(answers.length);
}, 180_000);
