/**
 * Requests as clients really send them, against an in-process worker on the real stack: every kind
 * of bad input gets a coded error reply (or a dead-letter record when no reply address is known)
 * and the next request is still served; a Spring ReplyingKafkaTemplate request is answered on its
 * partition with its correlation bytes; a daily sequence restarts at midnight in its time zone; a
 * formatted sequence prints its values with the request's fields; configured hooks refuse and record.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { type IHeaders, Kafka, type KafkaMessage, logLevel } from "kafkajs";
import { pino } from "pino";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { avroType, frame, requestSchemaText, requestType, unframe } from "../../src/protocol/avro.js";
import { homePartition } from "../../src/protocol/home-partition.js";
import { type IdReply, replyFromJson } from "../../src/protocol/reply.js";
import { RegistryClient } from "../../src/registry/client.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { Worker, type WorkerDeps } from "../../src/worker/worker.js";
import { ServedAdmin } from "../../stack/kafka-admin.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { poll, waitFor } from "../support/wait.js";
import { ownDatabase } from "../support/workers.js";

const services = ownDatabase(inject("services"), "requests");
const run = randomUUID().slice(0, 8);
const requestTopic = `req.${run}.requests`;
const dlqTopic = `req.${run}.dlq`;
const replyTopic = `req.${run}.replies`;
const config = loadConfig(
  {
    IDD_REQUEST_TOPIC: requestTopic,
    IDD_DLQ_TOPIC: dlqTopic,
    IDD_GROUP_ID: `req-${run}`,
    IDD_REQUEST_PARTITIONS: "2",
    IDD_MAX_COUNT: "100",
    IDD_WORKER_ID: `req-${run}`,
    IDD_HOOKS: "./src/hooks/examples/deny-list.ts",
  },
  services,
);
let now = Date.parse("2026-11-21T10:00:00Z");
const workerDeps: WorkerDeps = { config, logger: pino({ level: "silent" }), clock: () => now };
let worker: Worker;
const kafka = new Kafka({ clientId: `req-${run}`, brokers: services.kafkaBrokers, logLevel: logLevel.NOTHING });
const producer = kafka.producer({ allowAutoTopicCreation: false });
const consumer = kafka.consumer({ groupId: `req-test-${run}`, maxWaitTimeInMs: 50 });
const store = new Store(services.mongodbUrl);
const queries = new MongoQueries(services.mongodbUrl);
const registry = new RegistryClient(services.schemaRegistryUrl);
const received: { topic: string; partition: number; message: KafkaMessage }[] = [];
let requestSchemaId = 0;
const seq = `req-${run}`;
const daily = `req-${run}-daily`;
const invoice = `req-${run}-inv`;
const closed = `req-${run}-closed`;
process.env.IDD_DENY_SEQUENCES = closed; // the example hook reads it

beforeAll(async () => {
  await store.createSequence(defineSequence({ name: seq, start: 500 }, new Date()));
  await store.createSequence(defineSequence({ name: daily, kind: "daily", start: 100, timeZone: "Asia/Shanghai" }, new Date()));
  const format = "{field:area:3}-{yyyy}{MM}{dd}-{seq:4}{check:luhn}";
  await store.createSequence(
    defineSequence({ name: invoice, kind: "formatted", format, timeZone: "Asia/Shanghai", audit: true }, new Date()),
  );
  await store.createSequence(defineSequence({ name: closed }, new Date()));
  const admin = new ServedAdmin(services.kafkaBrokers);
  try {
    await admin.createTopics([
      { topic: replyTopic, partitions: 3 },
      { topic: dlqTopic, partitions: 1 },
    ]);
  } finally {
    await admin.close();
  }
  worker = await Worker.start(workerDeps);
  requestSchemaId = await registry.register(`${requestTopic}-value`, requestSchemaText);
  await producer.connect();
  await consumer.connect();
  await consumer.subscribe({ topics: [replyTopic, dlqTopic], fromBeginning: true });
  await consumer.run({ eachMessage: async ({ topic, partition, message }) => void received.push({ topic, partition, message }) });
}, 120_000);

afterAll(async () => {
  await consumer.disconnect();
  await producer.disconnect();
  await worker.stop();
  await queries.dropDatabase();
  await store.close();
});

/** Sends one raw record with a fresh correlation id and returns the reply record that echoes it. */
async function ask(value: Buffer | string, opts: { key?: string; headers?: IHeaders; replyTo?: boolean; partition?: number } = {}) {
  const correlation = randomBytes(16);
  const headers: IHeaders = {
    kafka_correlationId: correlation,
    ...(opts.replyTo !== false && { kafka_replyTopic: replyTopic }),
    ...opts.headers,
  };
  const partition = opts.partition === undefined ? {} : { partition: opts.partition };
  await producer.send({ topic: requestTopic, messages: [{ key: opts.key ?? seq, value, headers, ...partition }] });
  return waitFor(
    "reply",
    () => received.find((r) => r.topic === replyTopic && correlation.equals(r.message.headers?.kafka_correlationId as Buffer)),
    { everyMs: 20 },
  );
}

async function decode(value: Buffer | null): Promise<IdReply> {
  if (!value) throw new Error("empty reply");
  if (value[0] === 0x7b) return replyFromJson(value.toString());
  const { schemaId, body } = unframe(value);
  return avroType(await registry.schemaById(schemaId)).fromBuffer(body) as IdReply;
}

const json = (o: object) => JSON.stringify({ requestId: randomUUID(), sequence: seq, ...o });
const errorCode = async (r: { message: KafkaMessage }) => {
  const reply = await decode(r.message.value);
  expect(reply.status).toBe("ERROR");
  expect(String(r.message.headers?.idd_errorCode)).toBe(reply.error?.code);
  return reply.error?.code;
};

test("a JSON request is answered in JSON, an Avro request in Avro, with the period and numbers", async () => {
  const j = await decode((await ask(json({ count: 3 }))).message.value);
  expect(j).toMatchObject({ status: "OK", sequence: seq, period: null, ranges: [{ first: 500n, last: 502n }] });
  const a = await ask(frame(requestSchemaId, requestType, { requestId: "a1", sequence: seq, count: 2, replyTo: null, deadline: null }));
  expect(a.message.value?.[0]).toBe(0);
  expect(await decode(a.message.value)).toMatchObject({ requestId: "a1", status: "OK", ranges: [{ first: 503n, last: 504n }] });
});

test("bad input: each case gets an error reply with its stable code", async () => {
  const good = frame(requestSchemaId, requestType, { requestId: "x", sequence: seq, count: 1, replyTo: null, deadline: null });
  const cases: [string, Buffer | string, string, string?][] = [
    [
      "malformed Avro",
      Buffer.concat([good.subarray(0, 5), Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])]),
      "BAD_AVRO",
    ],
    ["unknown schema id", Buffer.concat([Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0]), good.subarray(5)]), "UNKNOWN_SCHEMA_ID"],
    ["neither JSON nor framed", "hello", "BAD_FRAME"],
    ["invalid JSON", '{"requestId": "x", "sequence": ', "BAD_JSON"],
    ["missing fields", '{"count": 1}', "BAD_REQUEST"],
    ["unknown sequence", json({ sequence: `nope-${run}` }), "UNKNOWN_SEQUENCE", `nope-${run}`],
    ["count 0", json({ count: 0 }), "INVALID_COUNT"],
    ["negative count", json({ count: -5 }), "INVALID_COUNT"],
    ["count above the maximum", json({ count: 101 }), "INVALID_COUNT"],
    ["sequence name too long", json({ sequence: "a".repeat(65) }), "INVALID_SEQUENCE_NAME", "a".repeat(65)],
    ["characters outside the allowed set", json({ sequence: "order no/1" }), "INVALID_SEQUENCE_NAME", "order no/1"],
    ["key is not the sequence", json({}), "KEY_MISMATCH", "other-key"],
    ["a 1 MB value", `{"pad": "${"x".repeat(1_000_000)}"}`, "REQUEST_TOO_LARGE"],
    ["deadline passed", json({ deadline: now - 1 }), "DEADLINE_EXCEEDED"],
  ];
  for (const [what, value, code, key] of cases) {
    expect.soft(await errorCode(await ask(value, key ? { key } : {})), what).toBe(code);
  }
  const next = await decode((await ask(json({ count: 1 }))).message.value); // and the worker still serves
  expect(next.status).toBe("OK");
});

test("a request on another partition than its sequence's home is forwarded and answered; a forged hop count only costs its own answer", async () => {
  const home = homePartition(seq, 2);
  const away = 1 - home;
  const ok = async (headers: IHeaders, partition: number) => decode((await ask(json({ count: 1 }), { headers, partition })).message.value);
  expect(await ok({}, away)).toMatchObject({ status: "OK" });
  expect(await ok({ idd_forwards: "not a number" }, away)).toMatchObject({ status: "OK" });
  expect(await ok({ idd_forwards: ["1", "2"] }, away)).toMatchObject({ status: "OK" });
  expect(await ok({ idd_forwards: "99" }, home)).toMatchObject({ status: "OK" }); // at home the count is not looked at
  const forged = await ask(json({ count: 1 }), { headers: { idd_forwards: "8" }, partition: away });
  expect(await errorCode(forged)).toBe("UNROUTABLE");
  expect(await ok({}, home)).toMatchObject({ status: "OK" });
});

test("no reply address: the record goes to the dead-letter topic with its reason, value and headers, repeated ones in full", async () => {
  const value = json({ count: 1 });
  await producer.send({ topic: requestTopic, messages: [{ key: seq, value, headers: { trace: "t-1", hop: ["a", "b", "c"] } }] });
  const dl = await waitFor("dead letter", () => received.find((r) => r.topic === dlqTopic && r.message.value?.toString() === value), {
    everyMs: 20,
  });
  expect(String(dl.message.headers?.idd_dlqCode)).toBe("NO_REPLY_ADDRESS");
  expect(String(dl.message.headers?.trace)).toBe("t-1");
  expect((dl.message.headers?.hop as Buffer[] | undefined)?.map(String)).toEqual(["a", "b", "c"]);
  expect(String(dl.message.headers?.idd_dlqSource)).toMatch(new RegExp(`^${requestTopic.replaceAll(".", "\\.")}/\\d+/\\d+$`));
  expect(dl.message.key?.toString()).toBe(seq);
});

test("offsets advance past every request, bad ones included", async () => {
  const admin = new ServedAdmin(services.kafkaBrokers);
  try {
    const ends = await admin.topicOffsets(requestTopic);
    let behind: typeof ends = [];
    const committedAll = async () => {
      const committed = await admin.groupOffsets(config.groupId, requestTopic);
      behind = ends.filter((e) => committed.find((p) => p.partition === e.partition)?.offset !== e.offset);
      return behind.length === 0;
    };
    if (!(await poll(committedAll, { timeoutMs: 15_000 }))) throw new Error(`offsets not committed: ${JSON.stringify(behind)}`);
  } finally {
    await admin.close();
  }
});

test("a request built byte for byte like Spring's ReplyingKafkaTemplate is answered on its partition with its correlation bytes", async () => {
  const correlation = randomBytes(16); // Spring: a UUID's 16 raw bytes
  const partition = Buffer.alloc(4);
  partition.writeInt32BE(2); // Spring: 4-byte big-endian int
  const value = frame(requestSchemaId, requestType, { requestId: "spring-1", sequence: seq, count: 1, replyTo: null, deadline: null });
  await producer.send({
    topic: requestTopic,
    messages: [
      {
        key: Buffer.from(seq),
        value,
        headers: { kafka_correlationId: correlation, kafka_replyTopic: Buffer.from(replyTopic), kafka_replyPartition: partition },
      },
    ],
  });
  const r = await waitFor(
    "spring reply",
    () => received.find((x) => x.topic === replyTopic && correlation.equals(x.message.headers?.kafka_correlationId as Buffer)),
    { everyMs: 20 },
  );
  expect(r.partition).toBe(2);
  expect(r.message.key?.toString()).toBe(seq);
  expect(await decode(r.message.value)).toMatchObject({ requestId: "spring-1", status: "OK" });
});

test("a daily sequence restarts at its start value at midnight in its time zone; the old period's numbers never come back", async () => {
  const numbersOf = async (count: number) => decode((await ask(json({ sequence: daily, count }), { key: daily })).message.value);
  now = Date.parse("2026-11-21T15:59:59.500Z"); // 23:59:59.5 in Shanghai
  const before = await numbersOf(3);
  expect(before).toMatchObject({ period: "20261121", ranges: [{ first: 100n, last: 102n }] });
  now = Date.parse("2026-11-21T16:00:00.200Z"); // 00:00:00.2 the next day in Shanghai (still the 21st in UTC)
  const after = await numbersOf(2);
  expect(after).toMatchObject({ period: "20261122", ranges: [{ first: 100n, last: 101n }] });
  now = Date.parse("2026-11-21T15:59:59.900Z"); // a late request for the old day
  const late = await numbersOf(1);
  expect(late.period).toBe("20261121");
  expect(late.ranges[0]?.first).toBeGreaterThan(102n);
});

test("a repeated requestId gets the same numbers back (G6); a new one gets new numbers", async () => {
  const requestId = randomUUID();
  const first = await decode((await ask(json({ requestId, count: 3 }))).message.value);
  const again = await decode((await ask(json({ requestId, count: 3 }))).message.value);
  const other = await decode((await ask(json({ count: 3 }))).message.value);
  expect(first.status).toBe("OK");
  expect(again.ranges).toEqual(first.ranges);
  expect((other.ranges[0] as { first: bigint }).first).toBeGreaterThan((first.ranges.at(-1) as { last: bigint }).last);
});

test("a formatted sequence over Kafka: fields in JSON and Avro, values printed in its zone; hooks refuse; answers audited", async () => {
  now = Date.parse("2026-11-21T18:30:00Z"); // 02:30 on the 22nd in Shanghai
  const j = await decode((await ask(json({ sequence: invoice, count: 2, fields: { area: "010" } }), { key: invoice })).message.value);
  expect(j).toMatchObject({ status: "OK", period: "20261122", formattedOmitted: false });
  expect(j.formatted.map((v) => v.slice(0, -1))).toEqual(["010-20261122-0001", "010-20261122-0002"]);
  const avro = { requestId: "inv-a", sequence: invoice, count: 1, replyTo: null, deadline: null, fields: { area: "021" } };
  const a = await decode((await ask(frame(requestSchemaId, requestType, avro), { key: invoice })).message.value);
  expect(a.formatted[0]?.slice(0, -1)).toBe("021-20261122-0003");
  const missing = await ask(json({ sequence: invoice }), { key: invoice });
  expect(await errorCode(missing)).toBe("BAD_FIELDS");
  expect(await errorCode(await ask(json({ sequence: closed }), { key: closed }))).toBe("HOOK_REFUSED");
  // An audited sequence: its answers are in MongoDB before the replies go out, one run per batch.
  const answered = await queries.issuanceOf(invoice);
  expect(answered.map((h) => [h.first, h.last, h.period])).toEqual([
    [1n, 2n, "20261122"],
    [3n, 3n, "20261122"],
  ]);
});
