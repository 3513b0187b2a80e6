/**
 * A forwarded request does not wait for its step's other numbers (docs/design.md §5.13): two
 * workers own one request partition each; one produce puts, on partition 0, a request of a sequence
 * at home there whose `before` hook takes 4 s, then a request of a sequence at home on partition 1.
 * The second is forwarded as soon as the step has routed it, and answered by the other worker while
 * the first still waits on its hook: its reply comes first. (When forwards left with the step's
 * replies, it came a hop after the slow one's.)
 */
import { randomUUID } from "node:crypto";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import { homePartition } from "../../src/protocol/home-partition.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { ServedAdmin } from "../../stack/kafka-admin.js";
import { waitFor } from "../support/wait.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker, type WorkerProcess } from "../support/workers.js";

const services = ownDatabase(inject("services"), "fwdearly");
const run = randomUUID().slice(0, 8);
const topic = `fwdearly.${run}.requests`;
const replyTopic = `fwdearly.${run}.replies`;
const SLOW_MS = 4000;
const name = (prefix: string, home: number) => {
  for (let i = 0; ; i++) if (homePartition(`${prefix}-${i}`, 2) === home) return `${prefix}-${i}`;
};
const slow = name(`slow-${run}`, 0);
const fast = name(`fast-${run}`, 1);
const env = {
  ...serviceEnv(services),
  IDD_REQUEST_TOPIC: topic,
  IDD_DLQ_TOPIC: `fwdearly.${run}.dlq`,
  IDD_GROUP_ID: `fwdearly-${run}`,
  IDD_REQUEST_PARTITIONS: "2",
  IDD_HOOKS: "./test/fixtures/hooks/slow-before.ts",
  IDD_HOOK_TIMEOUT_MS: String(SLOW_MS * 3),
  IDD_TEST_SLOW_PREFIX: `slow-${run}`,
  IDD_TEST_SLOW_MS: String(SLOW_MS),
};
const workers: WorkerProcess[] = [];
const store = new Store(services.mongodbUrl);
const admin = new ServedAdmin(services.kafkaBrokers);
const kafka = new Kafka({ clientId: "fwdearly", brokers: services.kafkaBrokers, logLevel: logLevel.NOTHING });
const producer = kafka.producer();
const consumer = kafka.consumer({ groupId: `fwdearly-replies-${run}`, maxWaitTimeInMs: 50 });
const replies: { sequence: string; status: string; at: number }[] = [];

/** The partitions each worker logged last. */
const assignments = () =>
  workers.map((w) => {
    const line = w.log.filter((l) => l.includes('"partitions assigned"')).at(-1);
    return line ? (JSON.parse(line) as { partitions: number[] }).partitions : [];
  });

beforeAll(async () => {
  for (const s of [slow, fast]) await store.createSequence(defineSequence({ name: s }, new Date()));
  workers.push(startWorker("fwdearly-w1", env));
  await workers[0]?.assigned;
  workers.push(startWorker("fwdearly-w2", env));
  await waitFor("each worker owning one partition", () => assignments().every((p) => p.length === 1), { timeoutMs: 60_000 });
  // The fast sequence warm at its home: its answer needs no claim.
  const client = await IdClient.connect({ brokers: services.kafkaBrokers, requestTopic: topic, timeoutMs: 30_000 });
  await client.next(fast);
  await client.close();
  await admin.createTopics([{ topic: replyTopic, partitions: 1 }]);
  await producer.connect();
  await consumer.connect();
  await consumer.subscribe({ topic: replyTopic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      const r = JSON.parse(String(message.value)) as { sequence: string; status: string };
      replies.push({ sequence: r.sequence, status: r.status, at: performance.now() });
    },
  });
}, 120_000);

afterAll(async () => {
  await consumer.disconnect().catch(() => {});
  await producer.disconnect().catch(() => {});
  await Promise.all(workers.map((w) => stopWorker(w)));
  await admin.close();
  await store.close();
});

test("a forwarded request is answered while its step's own request still waits", async () => {
  const request = (sequence: string) => ({
    key: sequence,
    value: JSON.stringify({ requestId: `${sequence}-r1`, sequence, count: 1 }),
    partition: 0,
    headers: { kafka_correlationId: `${sequence}-c1`, kafka_replyTopic: replyTopic },
  });
  const sent = performance.now();
  // One produce request: both records in one batch of partition 0, the slow one first.
  await producer.send({ topic, acks: -1, messages: [request(slow), request(fast)] });
  await waitFor("both replies", () => replies.length >= 2, { timeoutMs: SLOW_MS * 5 });
  expect(replies.map((r) => [r.sequence, r.status])).toEqual([
    [fast, "OK"],
    [slow, "OK"],
  ]);
  // The slow one waited on its hook: the order above is not a race the fast one won by chance.
  expect((replies[1]?.at ?? 0) - sent).toBeGreaterThanOrEqual(SLOW_MS - 50);
}, 60_000);
