/**
 * The echo service: the upper limit a kafkajs service can reach on idd's wire contract, for the
 * open-loop benchmark. Run as a process (`node --import tsx test/bench/echo.ts`), one member of a
 * consumer group on the request topic, like an idd worker but with no Redis, no MongoDB and no
 * checks: numbers come from an in-memory counter per sequence. Per batch it answers every request
 * with a JSON IdReply on the request's `kafka_replyTopic` (and `kafka_replyPartition`), echoing
 * `kafka_correlationId`, in sendBatch calls of at most 500 records with acks=all, and commits the
 * batch's offset after the acknowledgements.
 *
 * Environment: KAFKA_BROKERS, ECHO_TOPIC, ECHO_GROUP, ECHO_ID; ECHO_CONCURRENCY (partitions handled
 * at once, default 4 like idd's worker); ECHO_STEP_MS (a wait in every batch before its replies are
 * sent, standing for idd's Redis work; default 0). Logs one JSON line per assignment to stderr
 * (`{"msg":"partitions assigned","partitions":[…]}`, the same line an idd worker logs) and its
 * counts on SIGTERM.
 */
import { type IHeaders, Kafka, logLevel, Partitioners } from "kafkajs";

import { echoReply, replyPartition } from "./echo-reply.js";

const CHUNK = 500;
const STEP_MS = Number(process.env.ECHO_STEP_MS ?? 0);

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const topic = env("ECHO_TOPIC");
const log = (o: Record<string, unknown>) => process.stderr.write(`${JSON.stringify({ echo: process.env.ECHO_ID, ...o })}\n`);

function header(h: IHeaders | undefined, name: string): Buffer | undefined {
  const v = h?.[name];
  const one = Array.isArray(v) ? v[0] : v;
  if (one === undefined) return undefined;
  return typeof one === "string" ? Buffer.from(one, "utf8") : one;
}

const kafka = new Kafka({
  clientId: `echo-${process.env.ECHO_ID ?? "0"}`,
  brokers: env("KAFKA_BROKERS").split(","),
  logLevel: logLevel.ERROR,
  retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 5000 },
});
const producer = kafka.producer({
  allowAutoTopicCreation: false,
  idempotent: false,
  createPartitioner: Partitioners.DefaultPartitioner,
  retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 },
});
const consumer = kafka.consumer({
  groupId: env("ECHO_GROUP"),
  sessionTimeout: 10_000,
  heartbeatInterval: 1000,
  allowAutoTopicCreation: false,
  maxWaitTimeInMs: 100,
});
const counters = new Map<string, number>();
const stats = { requests: 0, replies: 0, unanswerable: 0, batches: 0 };

type Message = { key: Buffer | null; value: Buffer; headers: Record<string, Buffer> };

consumer.on(consumer.events.GROUP_JOIN, (e) => log({ msg: "partitions assigned", partitions: e.payload.memberAssignment[topic] ?? [] }));
await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic, fromBeginning: true });
await consumer.run({
  autoCommit: false,
  eachBatchAutoResolve: false,
  partitionsConsumedConcurrently: Number(process.env.ECHO_CONCURRENCY ?? 4),
  eachBatch: async ({ batch, heartbeat, resolveOffset }) => {
    if (batch.messages.length === 0) return;
    stats.batches++;
    if (STEP_MS > 0) await new Promise((r) => setTimeout(r, STEP_MS));
    const now = Date.now();
    const byTopic = new Map<string, (Message & { partition?: number })[]>();
    let answered = 0;
    for (const m of batch.messages) {
      stats.requests++;
      const correlation = header(m.headers, "kafka_correlationId");
      const replyTopic = header(m.headers, "kafka_replyTopic")?.toString("utf8");
      if (!m.value || !correlation || !replyTopic) {
        stats.unanswerable++;
        continue;
      }
      const value = echoReply(m.value, counters, now);
      const partition = replyPartition(header(m.headers, "kafka_replyPartition"));
      const out = { key: m.key, value, headers: { kafka_correlationId: correlation }, ...(partition !== undefined && { partition }) };
      const list = byTopic.get(replyTopic);
      if (list) list.push(out);
      else byTopic.set(replyTopic, [out]);
      answered++;
    }
    // Chunks of at most CHUNK records (across reply topics), all in flight together.
    const sends: Promise<unknown>[] = [];
    let chunk: { topic: string; messages: Message[] }[] = [];
    let size = 0;
    for (const [t, messages] of byTopic) {
      for (let i = 0; i < messages.length; ) {
        const take = messages.slice(i, i + (CHUNK - size));
        chunk.push({ topic: t, messages: take });
        size += take.length;
        i += take.length;
        if (size === CHUNK) {
          sends.push(producer.sendBatch({ acks: -1, topicMessages: chunk }));
          chunk = [];
          size = 0;
        }
      }
    }
    if (size > 0) sends.push(producer.sendBatch({ acks: -1, topicMessages: chunk }));
    await Promise.all(sends);
    stats.replies += answered;
    const last = batch.messages.at(-1)?.offset as string;
    await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(last) + 1n).toString() }]);
    resolveOffset(last);
    await heartbeat();
  },
});

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await consumer.disconnect().catch(() => {});
  await producer.disconnect().catch(() => {});
  log({ msg: "echo stopped", ...stats });
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
