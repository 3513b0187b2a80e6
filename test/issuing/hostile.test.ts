/**
 * Hostile input, from a plain kafkajs client (not idd's own), against an in-process worker on the
 * real stack. Each case sends good requests and one hostile request in the same produce request
 * (same key, so the same partition and the same fetched batch) and asserts: every good request is
 * answered exactly once, the hostile one is dead-lettered with its code, the group's committed
 * offset reaches the end of the partition, and the consumer never crashed.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { type IHeaders, Kafka, type KafkaMessage, logLevel, type Message } from "kafkajs";
import { pino } from "pino";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { replyFromJson } from "../../src/protocol/reply.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { Worker, type WorkerDeps } from "../../src/worker/worker.js";
import { ServedAdmin } from "../../stack/kafka-admin.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { waitFor } from "../support/wait.js";
import { ownDatabase } from "../support/workers.js";

const services = ownDatabase(inject("services"), "hostile");
const run = randomUUID().slice(0, 8);
const requestTopic = `hostile.${run}.requests`;
const dlqTopic = `hostile.${run}.dlq`;
const replyTopic = `hostile.${run}.replies`;
const tinyTopic = `hostile.${run}.tiny`; // max.message.bytes below one long reply
const groupId = `hostile-${run}`;
const config = loadConfig(
  {
    IDD_REQUEST_TOPIC: requestTopic,
    IDD_DLQ_TOPIC: dlqTopic,
    IDD_GROUP_ID: groupId,
    IDD_REQUEST_PARTITIONS: "2",
    IDD_WORKER_ID: `hostile-${run}`,
    IDD_AUTO_CREATE_SEQUENCES: "true",
    // Big steps, as a backlog brings them: one step's replies to one partition exceed 1 MiB.
    IDD_STEP_RECORDS: "5000",
    IDD_FETCH_MAX_BYTES_PER_PARTITION: String(8 * 1024 * 1024),
  },
  services,
);
const workerDeps: WorkerDeps = { config, logger: pino({ level: "silent" }) };
let worker: Worker;
const kafka = new Kafka({ clientId: `hostile-${run}`, brokers: services.kafkaBrokers, logLevel: logLevel.NOTHING });
const producer = kafka.producer({ allowAutoTopicCreation: false });
const consumer = kafka.consumer({ groupId: `hostile-test-${run}`, maxWaitTimeInMs: 50 });
const admin = new ServedAdmin(services.kafkaBrokers);
const store = new Store(services.mongodbUrl);
const queries = new MongoQueries(services.mongodbUrl);
const seq = `hostile-${run}`;
/** Every record seen on the reply topics and the dead-letter topic, by correlation id (hex). */
const replies = new Map<string, KafkaMessage[]>();
const deadLetters = new Map<string, KafkaMessage[]>();

beforeAll(async () => {
  await store.createSequence(defineSequence({ name: seq }, new Date()));
  await admin.createTopics([
    { topic: replyTopic, partitions: 3 },
    { topic: dlqTopic, partitions: 1 },
    { topic: tinyTopic, partitions: 1, configs: { "max.message.bytes": "2048" } },
  ]);
  worker = await Worker.start(workerDeps);
  await producer.connect();
  await consumer.connect();
  await consumer.subscribe({ topics: [replyTopic, tinyTopic, dlqTopic], fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ topic, message }) => {
      const id = (message.headers?.kafka_correlationId as Buffer | undefined)?.toString("hex") ?? "";
      const into = topic === dlqTopic ? deadLetters : replies;
      into.set(id, [...(into.get(id) ?? []), message]);
    },
  });
}, 120_000);

afterAll(async () => {
  await consumer.disconnect();
  await producer.disconnect();
  await worker.stop();
  await admin.deleteTopics([requestTopic, dlqTopic, replyTopic, tinyTopic]);
  await admin.close();
  await queries.dropDatabase();
  await store.close();
});

const POLL = { timeoutMs: 30_000, everyMs: 50 };

function good(opts: { requestId?: string; topic?: string } = {}): { message: Message; id: string } {
  const correlation = randomBytes(16);
  const message: Message = {
    key: seq,
    value: JSON.stringify({ requestId: opts.requestId ?? randomUUID(), sequence: seq, count: 1 }),
    headers: { kafka_correlationId: correlation, kafka_replyTopic: opts.topic ?? replyTopic },
  };
  return { message, id: correlation.toString("hex") };
}

function hostile(headers: IHeaders, body: object = {}): { message: Message; id: string } {
  const correlation = (headers.kafka_correlationId as Buffer | undefined) ?? randomBytes(16);
  const message: Message = {
    key: seq,
    value: JSON.stringify({ requestId: randomUUID(), sequence: seq, count: 1, ...body }),
    headers: { kafka_correlationId: correlation, ...headers },
  };
  return { message, id: correlation.toString("hex") };
}

/**
 * Sends good requests around one hostile request in one produce request, then checks the outcome:
 * each good one answered once with numbers, the hostile one dead-lettered once with `code`, the
 * committed offsets at the end of the topic, no consumer crash.
 */
async function attack(bad: { message: Message; id: string }, code: string, goods = 20, topic = replyTopic) {
  const before = worker.stats.crashes;
  const ok = Array.from({ length: goods }, () => good({ topic }));
  const half = Math.floor(goods / 2);
  await producer.send({ topic: requestTopic, messages: [...ok.slice(0, half), bad, ...ok.slice(half)].map((x) => x.message) });
  await waitFor("the answers and the dead letter", () => ok.every((x) => replies.has(x.id)) && deadLetters.has(bad.id), POLL);
  await committedToEnd();
  await new Promise((r) => setTimeout(r, 300)); // a duplicate would arrive by now
  for (const x of ok) {
    expect(replies.get(x.id)?.length).toBe(1);
    expect(replyFromJson(String(replies.get(x.id)?.[0]?.value)).status).toBe("OK");
  }
  expect(replies.has(bad.id)).toBe(false);
  const dl = deadLetters.get(bad.id) as KafkaMessage[];
  expect(dl.length).toBe(1);
  expect(String(dl[0]?.headers?.idd_dlqCode)).toBe(code);
  expect(worker.stats.crashes).toBe(before);
  return dl[0] as KafkaMessage;
}

async function committedToEnd(): Promise<void> {
  const ends = await admin.topicOffsets(requestTopic);
  await waitFor(
    "the committed offsets to reach the end of the request topic",
    async () => {
      const committed = await admin.groupOffsets(groupId, requestTopic);
      const at = (p: number) => committed.find((x) => x.partition === p)?.offset;
      return ends.every((e) => e.high === "0" || at(e.partition) === e.high); // an empty partition has nothing to commit
    },
    POLL,
  );
}

test("a reply to __consumer_offsets is dead-lettered as REPLY_TOPIC_INVALID", async () => {
  await attack(hostile({ kafka_replyTopic: "__consumer_offsets" }), "REPLY_TOPIC_INVALID");
});

test("a reply partition the topic does not have is dead-lettered as REPLY_PARTITION_INVALID", async () => {
  const p = Buffer.alloc(4);
  p.writeInt32BE(7); // the reply topic has 3
  await attack(hostile({ kafka_replyTopic: replyTopic, kafka_replyPartition: p }), "REPLY_PARTITION_INVALID");
});

test("a reply topic that does not exist is dead-lettered as REPLY_TOPIC_UNKNOWN", async () => {
  await attack(hostile({ kafka_replyTopic: `hostile.${run}.nowhere` }), "REPLY_TOPIC_UNKNOWN");
});

test("a 900 KB correlation id is dead-lettered as CORRELATION_ID_TOO_LARGE, its bytes kept", async () => {
  const huge = randomBytes(900 * 1024);
  const dl = await attack(hostile({ kafka_correlationId: huge, kafka_replyTopic: replyTopic }), "CORRELATION_ID_TOO_LARGE");
  expect(huge.equals(dl.headers?.kafka_correlationId as Buffer)).toBe(true);
});

test("300 KB of junk headers are dead-lettered as HEADERS_TOO_LARGE", async () => {
  const junk: IHeaders = {};
  for (let i = 0; i < 300; i++) junk[`junk-${i}`] = randomBytes(1024);
  const dl = await attack(hostile({ ...junk, kafka_replyTopic: replyTopic }), "HEADERS_TOO_LARGE");
  expect((junk["junk-299"] as Buffer).equals(dl.headers?.["junk-299"] as Buffer)).toBe(true); // nothing lost
});

test("a reply the broker refuses (topic limit below its size) is isolated: REPLY_REFUSED with the broker's reason", async () => {
  const bad = hostile({ kafka_replyTopic: tinyTopic }, { requestId: "x".repeat(3000) });
  const dl = await attack(bad, "REPLY_REFUSED", 20, tinyTopic);
  expect(String(dl.headers?.idd_dlqReason)).toMatch(/MESSAGE_TOO_LARGE|RECORD_LIST_TOO_LARGE/);
});

test("2,000 requests to one reply partition whose replies exceed 1 MiB are all answered, each once", async () => {
  const before = worker.stats.crashes;
  const p = Buffer.alloc(4); // every reply to partition 0
  const all = Array.from({ length: 2000 }, () => {
    const x = good({ requestId: `${randomUUID()}-${"r".repeat(600)}` });
    (x.message.headers as IHeaders).kafka_replyPartition = p;
    return x;
  });
  // Sent in produce requests under the broker's limit, as fast as possible: one backlog.
  for (let i = 0; i < all.length; i += 500) {
    await producer.send({ topic: requestTopic, messages: all.slice(i, i + 500).map((x) => x.message) });
  }
  await waitFor("2,000 replies", () => all.every((x) => replies.has(x.id)), { ...POLL, timeoutMs: 60_000 });
  await committedToEnd();
  await new Promise((r) => setTimeout(r, 300));
  const bytes = all.reduce((n, x) => n + (replies.get(x.id)?.[0]?.value?.length ?? 0), 0);
  expect(bytes).toBeGreaterThan(1024 * 1024);
  const numbers = all.map((x) => {
    expect(replies.get(x.id)?.length).toBe(1);
    return replyFromJson(String(replies.get(x.id)?.[0]?.value)).ranges[0]?.first;
  });
  expect(new Set(numbers).size).toBe(all.length);
  expect(worker.stats.crashes).toBe(before);
}, 90_000);
