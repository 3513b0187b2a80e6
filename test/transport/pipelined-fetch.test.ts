/**
 * A request never waits for another partition's step (src/transport/kafka/pipelined-fetch.ts): one
 * worker owns both request partitions; a request on partition 0 whose `before` hook takes 4 s, then,
 * once that step is under way, a request on partition 1. The second is fetched and answered while
 * the first still waits: its reply comes first. (kafkajs fetched a broker's partitions again only
 * once every batch of the last fetch was handled, so it came after the slow one's.) Then the second
 * request behind the slow one in the same batch of partition 0, forwarded home to partition 1: the
 * forward leaves at once (docs/design.md §5.13) and partition 1 is fetched while partition 0 is busy.
 */
import { randomUUID } from "node:crypto";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import { homePartition } from "../../src/protocol/home-partition.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { ServedAdmin } from "../../stack/kafka-admin.js";
import { sleep, waitFor } from "../support/wait.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker, type WorkerProcess } from "../support/workers.js";

const services = ownDatabase(inject("services"), "nolock");
const run = randomUUID().slice(0, 8);
const topic = `nolock.${run}.requests`;
const replyTopic = `nolock.${run}.replies`;
const SLOW_MS = 4000;
const name = (prefix: string, home: number) => {
  for (let i = 0; ; i++) if (homePartition(`${prefix}-${i}`, 2) === home) return `${prefix}-${i}`;
};
const slow = name(`slow-${run}`, 0);
const fast = name(`fast-${run}`, 1);
const env = {
  ...serviceEnv(services),
  IDD_REQUEST_TOPIC: topic,
  IDD_DLQ_TOPIC: `nolock.${run}.dlq`,
  IDD_GROUP_ID: `nolock-${run}`,
  IDD_REQUEST_PARTITIONS: "2",
  IDD_HOOKS: "./test/fixtures/hooks/slow-before.ts",
  IDD_HOOK_TIMEOUT_MS: String(SLOW_MS * 3),
  IDD_TEST_SLOW_PREFIX: `slow-${run}`,
  IDD_TEST_SLOW_MS: String(SLOW_MS),
};
const workers: WorkerProcess[] = [];
const store = new Store(services.mongodbUrl);
const admin = new ServedAdmin(services.kafkaBrokers);
const kafka = new Kafka({ clientId: "nolock", brokers: services.kafkaBrokers, logLevel: logLevel.NOTHING });
const producer = kafka.producer();
const consumer = kafka.consumer({ groupId: `nolock-replies-${run}`, maxWaitTimeInMs: 50 });
const replies: { sequence: string; status: string; at: number }[] = [];

beforeAll(async () => {
  for (const s of [slow, fast]) await store.createSequence(defineSequence({ name: s }, new Date()));
  workers.push(startWorker("nolock-w1", env));
  await workers[0]?.assigned;
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

const request = (sequence: string, id: string) => ({
  key: sequence,
  value: JSON.stringify({ requestId: `${sequence}-${id}`, sequence, count: 1 }),
  headers: { kafka_correlationId: `${sequence}-${id}`, kafka_replyTopic: replyTopic },
});

/**
 * The slow request on partition 0, then the fast one: `direct`, on partition 1 once the slow one is
 * in its hook; `forwarded`, behind the slow one in the same batch of partition 0.
 */
async function race(id: string, how: "direct" | "forwarded"): Promise<void> {
  replies.length = 0;
  const sent = performance.now();
  if (how === "forwarded") {
    await producer.send({ topic, acks: -1, messages: [request(slow, id), request(fast, id)].map((m) => ({ ...m, partition: 0 })) });
  } else {
    await producer.send({ topic, acks: -1, messages: [{ ...request(slow, id), partition: 0 }] });
    await sleep(1000); // fetched, and in its hook
    await producer.send({ topic, acks: -1, messages: [{ ...request(fast, id), partition: 1 }] });
  }
  await waitFor("both replies", () => replies.length >= 2, { timeoutMs: SLOW_MS * 5 });
  expect(replies.map((r) => [r.sequence, r.status])).toEqual([
    [fast, "OK"],
    [slow, "OK"],
  ]);
  // The slow one waited on its hook: the order above is not a race the fast one won by chance.
  expect((replies[1]?.at ?? 0) - sent).toBeGreaterThanOrEqual(SLOW_MS - 50);
}

test("a request on another partition is answered while a step of partition 0 waits", () => race("1", "direct"), 60_000);

test("a request forwarded to another partition is answered while a step of partition 0 waits", () => race("2", "forwarded"), 60_000);
