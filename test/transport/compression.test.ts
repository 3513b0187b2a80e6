/**
 * Compressed requests from clients no one here wrote, against 2 real idd workers on a request topic
 * of 6 partitions: librdkafka (confluent-kafka, `linger.ms=20`, so batches form and are compressed)
 * with each `compression.type` Kafka defines, and examples/go (franz-go as it comes: snappy batches,
 * murmur2 partitioner), all at once, 1,000 requests each with 50 in flight. Every request must be
 * answered, every number checked (none twice, causal order), and no consumer may crash. Before idd
 * read every codec, snappy, lz4 and zstd batches crash-looped every consumer that fetched them.
 *
 * Then a batch no one can decode within idd's bound (a gzip bomb: 80 MiB of one byte in a record,
 * 80 KB on the wire, which the broker accepts): it is dead-lettered whole with its offsets, and a
 * request sent right after it on the same partition is answered by the same consumer.
 */
import { randomUUID } from "node:crypto";
import { Kafka, type KafkaMessage, logLevel } from "kafkajs";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { createKafka, partitionForKey } from "../../src/transport/kafka/index.js";
import { buildGoExample, pythonExampleVenv } from "../../stack/examples.js";
import { layoutFromEnv, REPO_ROOT } from "../../stack/paths.js";
import { type ClientRun, runClient } from "../support/client-runs.js";
import { checkHistory } from "../support/history.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { poll } from "../support/wait.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker, type WorkerProcess } from "../support/workers.js";

const services = ownDatabase(inject("services"), "compression");
const run = randomUUID().slice(0, 8);
const PARTITIONS = 6;
const requestTopic = `compression.${run}.requests`;
const dlqTopic = `compression.${run}.dlq`;
const replyTopic = `compression.${run}.replies`;
const env = {
  ...serviceEnv(services),
  IDD_REQUEST_TOPIC: requestTopic,
  IDD_DLQ_TOPIC: dlqTopic,
  IDD_GROUP_ID: `compression-${run}`,
  IDD_REQUEST_PARTITIONS: String(PARTITIONS),
  IDD_AUTO_CREATE_SEQUENCES: "true",
};
const brokers = services.kafkaBrokers.join(",");
const log = (line: string) => process.stderr.write(`compression: ${line}\n`);
const workers: WorkerProcess[] = [];
const queries = new MongoQueries(services.mongodbUrl);
const transport = createKafka({ brokers: services.kafkaBrokers, clientId: `compression-test-${run}` });
const kafka = new Kafka({ clientId: `compression-${run}`, brokers: services.kafkaBrokers, logLevel: logLevel.NOTHING });
const consumer = kafka.consumer({ groupId: `compression-test-${run}`, maxWaitTimeInMs: 50 });
/** Every record read on the reply topic and the dead-letter topic. */
const replies: KafkaMessage[] = [];
const deadLetters: KafkaMessage[] = [];
let python: string;
let goClient: string;

const crashes = () => workers.flatMap((w) => w.log.filter((l) => l.includes("Kafka consumer crashed")));
const assignments = () =>
  workers.map((w) => {
    const line = w.log.findLast((l) => l.includes('"msg":"partitions assigned"'));
    return line ? (JSON.parse(line) as { partitions: number[] }).partitions : [];
  });

beforeAll(async () => {
  const layout = layoutFromEnv();
  [python, goClient] = await Promise.all([pythonExampleVenv(layout, log), buildGoExample(layout, log)]);
  await transport.ensureTopics([
    { topic: replyTopic, partitions: 1 },
    { topic: dlqTopic, partitions: 1 },
  ]);
  for (let i = 1; i <= 2; i++) workers.push(startWorker(`compression-w${i}`, env));
  const assigned = () => assignments().every((p) => p.length > 0) && assignments().flat().length === PARTITIONS;
  if (!(await poll(assigned, { timeoutMs: 60_000 }))) throw new Error(`workers not assigned: ${JSON.stringify(assignments())}`);
  await consumer.connect();
  await consumer.subscribe({ topics: [replyTopic, dlqTopic], fromBeginning: true });
  await consumer.run({ eachMessage: async ({ topic, message }) => void (topic === dlqTopic ? deadLetters : replies).push(message) });
}, 600_000);

afterAll(async () => {
  await consumer.disconnect();
  await Promise.all(workers.map((w) => stopWorker(w, "SIGKILL")));
  await transport.deleteTopics([requestTopic, dlqTopic, replyTopic]).catch(() => {});
  await transport.close();
  await queries.dropDatabase();
});

const CODECS = ["none", "gzip", "snappy", "lz4", "zstd"] as const;

test("librdkafka with every codec and franz-go with its defaults, at once: every request answered, every number once, in causal order", async () => {
  const sequences = (client: string) => Array.from({ length: 4 }, (_, i) => `cz-${run}-${client}${i}`).join(",");
  const librdkafka = (codec: string) =>
    runClient(python, [`${REPO_ROOT}/test/support/librdkafka_client.py`, brokers, sequences(codec), "1000", "50", requestTopic, codec]);
  // A sequence shared by every client too: its numbers come from one place whatever the codec.
  const shared = `cz-${run}-shared`;
  const runs: [string, ClientRun][] = await Promise.all([
    ...CODECS.map(async (codec) => [`librdkafka ${codec}`, await librdkafka(codec)] as [string, ClientRun]),
    (async () =>
      ["franz-go", await runClient(goClient, [brokers, `${sequences("go")},${shared}`, "1000", "50", requestTopic])] as [
        string,
        ClientRun,
      ])(),
  ]);
  for (const [name, r] of runs) {
    log(`${name}: exit ${r.status}, ${r.history.length} numbers; ${r.stderr.trim().split("\n").at(-1)}`);
    expect(r.status, `${name}: ${r.stderr.slice(-2000)}`).toBe(0);
    expect(r.history.length, name).toBe(1000);
  }
  const report = checkHistory(runs.flatMap(([, r]) => r.history));
  expect(report.duplicates.slice(0, 5), `${report.duplicates.length} duplicates`).toEqual([]);
  expect(report.orderViolations.slice(0, 5), `${report.orderViolations.length} causal order violations`).toEqual([]);
  expect(crashes()).toEqual([]);
  expect(deadLetters).toEqual([]);
}, 300_000);

test("a batch idd cannot decode is dead-lettered whole; the next request on its partition is answered by the same consumer", async () => {
  const sequence = `cz-${run}-after-bomb`;
  const partition = partitionForKey(requestTopic, sequence, PARTITIONS);
  const owner = workers.find((_, i) => assignments()[i]?.includes(partition)) as WorkerProcess;
  const ownerLines = owner.log.length;
  const producer = await transport.producer({ compression: "gzip" });
  try {
    // 80 MiB of one byte inflates past the 64 MiB a batch may decompress to: idd cannot read it.
    const bomb = { topic: requestTopic, partition, key: sequence, value: Buffer.alloc(80 * 1024 * 1024, 0x20), headers: {} };
    await producer.sendPartition(requestTopic, partition, [bomb]);
    const correlationId = randomUUID();
    const request = { requestId: randomUUID(), sequence, count: 1 };
    const sentAt = Date.now();
    await producer.sendPartition(requestTopic, partition, [
      {
        topic: requestTopic,
        partition,
        key: sequence,
        value: Buffer.from(JSON.stringify(request)),
        headers: { kafka_correlationId: correlationId, kafka_replyTopic: replyTopic },
      },
    ]);
    const answered = () => replies.find((m) => m.headers?.kafka_correlationId?.toString() === correlationId);
    const reply = await poll(answered, { timeoutMs: 20_000 });
    log(`the request after the bomb was answered ${Date.now() - sentAt} ms after it was sent`);
    expect(reply, "the request behind the undecodable batch was answered").toBeDefined();
    expect(JSON.parse(String(reply?.value))).toMatchObject({ requestId: request.requestId, status: "OK" });
    const dlq = await poll(() => deadLetters[0], { timeoutMs: 10_000 });
    const h = (k: string) => dlq?.headers?.[k]?.toString();
    expect(h("idd_dlqCode")).toBe("BATCH_UNREADABLE");
    expect(h("idd_dlqSource")).toMatch(new RegExp(`^${requestTopic.replaceAll(".", "\\.")}/${partition}/\\d+$`));
    expect(h("idd_dlqOffsets")).toMatch(/^\d+-\d+$/);
    expect(h("idd_dlqReason")).toMatch(/could not be decoded: .*(exceeds|larger than)/);
    expect(dlq?.value?.length).toBeGreaterThan(61); // the batch as fetched, header and compressed records
    expect(deadLetters).toHaveLength(1);
    expect(crashes()).toEqual([]);
    // The same consumer kept the partition: no rebalance, no new member.
    expect(owner.log.slice(ownerLines).filter((l) => l.includes('"partitions assigned"'))).toEqual([]);
    expect(owner.log.slice(ownerLines).filter((l) => l.includes('"msg":"a fetched batch could not be decoded'))).toHaveLength(1);
  } finally {
    await producer.close();
  }
}, 120_000);
