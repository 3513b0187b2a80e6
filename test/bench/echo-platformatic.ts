/**
 * The echo service of test/bench/echo.ts on @platformatic/kafka instead of kafkajs (issue #30, item 3):
 * how fast a pure-TypeScript Kafka client that fetches without waiting for the records it already
 * handed out can answer idd's wire contract, on this broker. Needs Node ≥ 22.22 (run it with
 * `--target-node`). Same environment, same log lines and the same replies as echo.ts.
 *
 * The consumer's stream is read as it comes, while the next fetches are already out. As in idd, each
 * partition has one step at a time: a step answers every record of the partition that arrived before
 * it began (sends of at most 500 records with acks=all) and commits the partition's offset once the
 * replies are acknowledged.
 */
import { Consumer, type Message, ProduceAcks, Producer } from "@platformatic/kafka";

import { echoReply, replyPartition } from "./echo-reply.js";

const CHUNK = 500;
/** ECHO_STEP_MS: a wait in every step before the replies are sent, standing for idd's Redis work (0: none). */
const STEP_MS = Number(process.env.ECHO_STEP_MS ?? 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const topic = env("ECHO_TOPIC");
const brokers = env("KAFKA_BROKERS").split(",");
const log = (o: Record<string, unknown>) => process.stderr.write(`${JSON.stringify({ echo: process.env.ECHO_ID, ...o })}\n`);

/** A header by name: platformatic's deserializers give Buffers as keys, so it is looked for by value. */
function header(m: Message, name: string): Buffer | undefined {
  for (const [k, v] of m.headerEntries) if (k.toString("latin1") === name) return v;
  return undefined;
}

const clientId = `echo-${process.env.ECHO_ID ?? "0"}`;
const producer = new Producer({ clientId, bootstrapBrokers: brokers, acks: ProduceAcks.ALL, autocreateTopics: false });
const consumer = new Consumer({ clientId, groupId: env("ECHO_GROUP"), bootstrapBrokers: brokers });
const counters = new Map<string, number>();
const stats = { requests: 0, replies: 0, unanswerable: 0, batches: 0, failed: 0, firstError: "" };

consumer.on("consumer:group:join", (e: { assignments?: { topic: string; partitions: number[] }[] }) =>
  log({ msg: "partitions assigned", partitions: e.assignments?.find((a) => a.topic === topic)?.partitions ?? [] }),
);

const stream = await consumer.consume({
  topics: [topic],
  mode: "committed",
  fallbackMode: "earliest",
  autocommit: false,
  sessionTimeout: 10_000,
  heartbeatInterval: 1000,
  maxWaitTime: 100,
});

async function answer(messages: Message[]): Promise<void> {
  stats.batches++;
  if (STEP_MS > 0) await sleep(STEP_MS);
  const now = Date.now();
  const replies = [];
  /** Per partition, its last record: committed once the replies are acknowledged. */
  const last = new Map<number, Message>();
  for (const m of messages) {
    stats.requests++;
    last.set(m.partition, m);
    const correlation = header(m, "kafka_correlationId");
    const replyTopic = header(m, "kafka_replyTopic")?.toString("utf8");
    if (!m.value || !correlation || !replyTopic) {
      stats.unanswerable++;
      continue;
    }
    const value = echoReply(m.value, counters, now);
    const partition = replyPartition(header(m, "kafka_replyPartition"));
    replies.push({
      topic: replyTopic,
      ...(m.key && { key: m.key }),
      value,
      headers: new Map([[Buffer.from("kafka_correlationId"), correlation]]),
      ...(partition !== undefined && { partition }),
    });
  }
  // Sends of at most CHUNK records, all in flight together, as echo.ts (one batch of a burst's
  // turn is larger than the broker takes in one record batch: MESSAGE_TOO_LARGE).
  const sends = [];
  for (let i = 0; i < replies.length; i += CHUNK) sends.push(producer.send({ messages: replies.slice(i, i + CHUNK) }));
  await Promise.all(sends);
  stats.replies += replies.length;
  await Promise.all([...last.values()].map((m) => m.commit()));
}

/** Per partition: the records not yet handed to a step, and whether a step is running (one at a time, in order). */
const partitions = new Map<number, { pending: Message[]; busy: boolean }>();

/** Runs the partition's steps one after another while records wait, each on all the records that arrived before it began. */
async function drain(p: { pending: Message[]; busy: boolean }): Promise<void> {
  p.busy = true;
  while (p.pending.length > 0) {
    const messages = p.pending;
    p.pending = [];
    try {
      await answer(messages);
    } catch (e) {
      stats.failed += messages.length;
      if (!stats.firstError) stats.firstError = String((e as Error & { errors?: Error[] }).errors?.[0]?.message ?? e);
    }
  }
  p.busy = false;
}

stream.on("data", (m: Message) => {
  const p = partitions.get(m.partition) ?? { pending: [], busy: false };
  partitions.set(m.partition, p);
  p.pending.push(m);
  // After this turn's other records: a step takes all of the partition's that arrived together.
  if (!p.busy) {
    p.busy = true;
    setImmediate(() => void drain(p));
  }
});
stream.on("error", (e: Error) => log({ msg: "stream error", err: e.message }));

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await stream.close().catch(() => {});
  await consumer.close(true).catch(() => {});
  await producer.close().catch(() => {});
  log({ msg: "echo stopped", ...stats });
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
