/**
 * The clients in examples/, as users run them, against 3 real idd workers on a request topic of 6
 * partitions: the Java one (Spring's ReplyingKafkaTemplate, JSON, Kafka's murmur2 partitioner) and
 * the Python one (confluent-kafka, registry-framed Avro, librdkafka's default consistent_random
 * partitioner, i.e. CRC32). Every number they print is checked with test/support/history.ts: none
 * twice, and causal order (a request sent after another reply arrived gets a larger number). The
 * clients stamp requests and replies with CLOCK_MONOTONIC nanoseconds (System.nanoTime,
 * time.monotonic_ns), comparable across processes on one machine, so their histories merge.
 *
 * SmallRyeClient.java sends exactly the headers of Quarkus / SmallRye's KafkaRequestReply. The
 * NestJS one (ClientKafka, murmur2) completes its observables on idd's kafka_nest-is-disposed and
 * gets error replies as the observable's error. Then the Java, Python, NestJS and Go (franz-go)
 * clients ask for the same sequences, chosen so that the two partitioners put each on a different
 * partition: idd must still issue each sequence from one place. The last two
 * run the gapless flows (take two numbers, confirm one, void one) of Python (Avro) and Java (JSON)
 * and read the outcome from MongoDB.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { crc32 } from "node:zlib";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { reveal } from "../../src/config/secret.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { partitionForKey } from "../../src/transport/kafka/index.js";
import { buildGoExample, buildSpringExample, NESTJS_EXAMPLE, PYTHON_EXAMPLE, pythonExampleVenv } from "../../stack/examples.js";
import { javaBin } from "../../stack/install.js";
import { layoutFromEnv } from "../../stack/paths.js";
import { type ClientRun, runClient } from "../support/client-runs.js";
import { checkHistory } from "../support/history.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { poll } from "../support/wait.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker, type WorkerProcess, workerTrouble } from "../support/workers.js";

const services = ownDatabase(inject("services"), "examples");
const run = randomUUID().slice(0, 8);
const PARTITIONS = 6;
const env = {
  ...serviceEnv(services),
  IDD_REQUEST_TOPIC: `examples.${run}.requests`,
  IDD_DLQ_TOPIC: `examples.${run}.dlq`,
  IDD_GROUP_ID: `examples-${run}`,
  IDD_REQUEST_PARTITIONS: String(PARTITIONS),
};
const brokers = services.kafkaBrokers.join(",");
/** The registry with its basic auth in the URL, the one way the Python example takes it. */
const registryUrl = (() => {
  const { username, password } = services.security.registry;
  if (!username || password === undefined) return services.schemaRegistryUrl;
  const u = new URL(services.schemaRegistryUrl);
  u.username = encodeURIComponent(username);
  u.password = encodeURIComponent(reveal(password));
  return u.toString();
})();
const log = (line: string) => process.stderr.write(`examples: ${line}\n`);
const workers: WorkerProcess[] = [];
const store = new Store(services.mongodbUrl);
const queries = new MongoQueries(services.mongodbUrl);
let jar: string;
let python: string;
let go: string;

const springSequences = Array.from({ length: 4 }, (_, i) => `ex-${run}-spring${i}`);
const pythonSequences = Array.from({ length: 4 }, (_, i) => `ex-${run}-python${i}`);
const nestSequences = Array.from({ length: 4 }, (_, i) => `ex-${run}-nest${i}`);
const smallryeSequences = Array.from({ length: 4 }, (_, i) => `ex-${run}-smallrye${i}`);
/** Sequences Kafka's partitioner (murmur2) and librdkafka's default one (CRC32) put on different partitions. */
const sharedSequences: string[] = [];
for (let i = 0; sharedSequences.length < 8; i++) {
  const name = `ex-${run}-shared${i}`;
  if (partitionForKey(env.IDD_REQUEST_TOPIC, name, PARTITIONS) !== crc32(name) % PARTITIONS) sharedSequences.push(name);
}

/** The latest partitions each worker logged as assigned. */
function assignments(): number[][] {
  return workers.map((w) => {
    const line = w.log.findLast((l) => l.includes('"msg":"partitions assigned"'));
    return line ? (JSON.parse(line) as { partitions: number[] }).partitions : [];
  });
}

beforeAll(async () => {
  const layout = layoutFromEnv();
  [jar, python, go] = await Promise.all([buildSpringExample(layout, log), pythonExampleVenv(layout, log), buildGoExample(layout, log)]);
  for (const name of [...springSequences, ...pythonSequences, ...nestSequences, ...smallryeSequences, ...sharedSequences])
    await store.createSequence(defineSequence({ name, kind: "monotonic", start: 1 }, new Date()));
  for (let i = 1; i <= 3; i++) workers.push(startWorker(`examples-w${i}`, env));
  // Every worker holds some of the 6 partitions, so a sequence on two partitions can meet two workers.
  const assigned = () => assignments().every((p) => p.length > 0) && assignments().flat().length === PARTITIONS;
  if (!(await poll(assigned, { timeoutMs: 60_000 }))) throw new Error(`workers not assigned: ${JSON.stringify(assignments())}`);
  log(`3 workers, partitions ${JSON.stringify(assignments())}`);
}, 600_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => stopWorker(w, "SIGKILL")));
  await queries.dropDatabase();
  await store.close();
});

const spring = (sequences: string[], requests: number, inFlight: number) =>
  runClient(javaBin() ?? "java", ["-jar", jar, brokers, sequences.join(","), String(requests), String(inFlight), env.IDD_REQUEST_TOPIC]);
const py = (sequences: string[], requests: number, inFlight: number) =>
  runClient(python, [
    `${PYTHON_EXAMPLE}/client.py`,
    brokers,
    registryUrl,
    sequences.join(","),
    String(requests),
    String(inFlight),
    env.IDD_REQUEST_TOPIC,
  ]);

const nest = (sequences: string[], requests: number, inFlight: number) =>
  runClient(process.execPath, [
    "--import",
    "tsx",
    NESTJS_EXAMPLE,
    brokers,
    sequences.join(","),
    String(requests),
    String(inFlight),
    env.IDD_REQUEST_TOPIC,
  ]);
const smallrye = (sequences: string[], requests: number, inFlight: number) =>
  runClient(javaBin() ?? "java", [
    "-cp",
    jar,
    "idd.example.SmallRyeClient",
    brokers,
    sequences.join(","),
    String(requests),
    String(inFlight),
    env.IDD_REQUEST_TOPIC,
  ]);
const goClient = (sequences: string[], requests: number, inFlight: number) =>
  runClient(go, [brokers, sequences.join(","), String(requests), String(inFlight), env.IDD_REQUEST_TOPIC]);

function check(name: string, runs: ClientRun[], requests: number) {
  const history = runs.flatMap((r) => r.history);
  const report = checkHistory(history);
  log(
    `${name}: ${history.length} requests, ${report.numbers} numbers, ${report.duplicates.length} duplicates, ${report.orderViolations.length} order violations`,
  );
  for (const r of runs) expect(r.status, `${r.stderr}\n${workerTrouble(workers)}`).toBe(0);
  expect(history.length).toBe(requests);
  // The first few of each, with how many there are: a broken run can have hundreds.
  expect(report.duplicates.slice(0, 5), `${report.duplicates.length} duplicates`).toEqual([]);
  expect(report.orderViolations.slice(0, 5), `${report.orderViolations.length} decreases (causal order violations)`).toEqual([]);
}

test("the Spring client (ReplyingKafkaTemplate, JSON): 1,000 requests, 100 in flight, every number once and in causal order", async () => {
  const r = await spring(springSequences, 1000, 100);
  check("spring", [r], 1000);
}, 120_000);

test("the Python client (confluent-kafka, registry-framed Avro): 1,000 requests, every number once and in causal order", async () => {
  const r = await py(pythonSequences, 1000, 20);
  check("python", [r], 1000);
}, 120_000);

test("the NestJS client (ClientKafka, lastValueFrom(send)): 1,000 requests, 50 in flight, every number once; an error reply is the observable's error", async () => {
  const r = await nest(nestSequences, 1000, 50);
  check("nestjs", [r], 1000);
  // The error path, the NestJS way: catchError got idd's error from kafka_nest-err.
  expect(r.stderr).toContain('an unknown sequence: {"handledCode":"UNKNOWN_SEQUENCE"}');
}, 120_000);

test("SmallRye KafkaRequestReply's headers (REPLY_TOPIC, REPLY_PARTITION, REPLY_CORRELATION_ID): 1,000 requests, 50 in flight, every number once; an error reply fails the request", async () => {
  const r = await smallrye(smallryeSequences, 1000, 50);
  check("smallrye", [r], 1000);
  expect(r.stderr).toContain("an unknown sequence: UNKNOWN_SEQUENCE");
}, 120_000);

test("Java, Python, NestJS and Go clients on the same 8 sequences, which their partitioners put on different partitions: no duplicate, no decrease", async () => {
  log(
    `shared sequences (murmur2 partition/CRC32 partition): ${sharedSequences.map((s) => `${partitionForKey(env.IDD_REQUEST_TOPIC, s, PARTITIONS)}/${crc32(s) % PARTITIONS}`).join(" ")}`,
  );
  // Each client asks for the sequences in turn, each request after its previous reply, all at once.
  const runs = await Promise.all([
    spring(sharedSequences, 160, 1),
    py(sharedSequences, 160, 1),
    nest(sharedSequences, 160, 1),
    goClient(sharedSequences, 160, 1),
  ]);
  check("mixed", runs, 640);
}, 180_000);

/**
 * Runs a gapless flow example on a new daily gapless sequence and checks its output and MongoDB's
 * rows: number 1 confirmed, number 2 voided with the example's reason, both in the period printed.
 */
async function gaplessFlow(name: string, command: (sequence: string) => string[]) {
  const sequence = `ex-${run}-gapless-${name}`;
  await store.createSequence(defineSequence({ name: sequence, kind: "daily", gapless: true, start: 1 }, new Date()));
  const [cmd, ...args] = command(sequence) as [string, ...string[]];
  const t0 = Date.now();
  const out = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => p.kill("SIGKILL"), 90_000);
    p.on("error", reject);
    p.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
  log(`${name} gapless flow: exit ${out.status} in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  expect(out.status, `${out.stderr}\n${workerTrouble(workers)}`).toBe(0);
  const rows = await queries.gaplessOf(sequence);
  expect(rows.map((r) => [r.number, r.state, r.reason])).toEqual([
    [1n, "confirmed", null],
    [2n, "voided", "order cancelled before invoicing"],
  ]);
  expect(rows[0]?.period).toMatch(/^\d{8}$/);
  expect(out.stdout).toBe(`confirmed 1\nvoided 2\nperiod ${rows[0]?.period}\n`);
}

test("the Python gapless flow (examples/python/gapless.py): take two numbers, confirm one, void the other", async () => {
  await gaplessFlow("python", (sequence) => [
    python,
    `${PYTHON_EXAMPLE}/gapless.py`,
    brokers,
    registryUrl,
    sequence,
    env.IDD_REQUEST_TOPIC,
  ]);
}, 120_000);

test("the Java gapless flow (GaplessFlow.java, JSON): take two numbers, confirm one, void the other", async () => {
  await gaplessFlow("java", (sequence) => [
    javaBin() ?? "java",
    "-cp",
    jar,
    "idd.example.GaplessFlow",
    brokers,
    sequence,
    env.IDD_REQUEST_TOPIC,
  ]);
}, 120_000);
