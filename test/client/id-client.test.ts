/**
 * IdClient against the real stack and an in-process idd worker: thousands of requests in flight
 * from one client (batched sends) each answered once with unique numbers; Avro replies through the
 * registry; error replies with their code; CLIENT_TIMEOUT when nobody answers; CLIENT_CLOSED for
 * what is pending at close.
 */
import { randomUUID } from "node:crypto";
import { pino } from "pino";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import { loadConfig } from "../../src/config/config.js";
import { isIddError } from "../../src/core/errors.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { Worker, type WorkerDeps } from "../../src/worker/worker.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { ownDatabase } from "../support/workers.js";

const services = ownDatabase(inject("services"), "client");
const run = randomUUID().slice(0, 8);
const requestTopic = `client.${run}.requests`;
const config = loadConfig(
  { IDD_REQUEST_TOPIC: requestTopic, IDD_DLQ_TOPIC: `client.${run}.dlq`, IDD_GROUP_ID: `client-${run}`, IDD_WORKER_ID: `client-${run}` },
  services,
);
const workerDeps: WorkerDeps = { config, logger: pino({ level: process.env.TEST_LOG ?? "silent" }) };
let worker: Worker;
const store = new Store(services.mongodbUrl);
const queries = new MongoQueries(services.mongodbUrl);
const seq = `client-${run}`;
const clients: IdClient[] = [];
const connect = async (o: Partial<Parameters<typeof IdClient.connect>[0]> = {}) => {
  const c = await IdClient.connect({ brokers: services.kafkaBrokers, requestTopic, schemaRegistryUrl: services.schemaRegistryUrl, ...o });
  clients.push(c);
  return c;
};
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => "resolved",
    (e: unknown) => (isIddError(e) ? e.code : String(e)),
  );

beforeAll(async () => {
  await store.createSequence(defineSequence({ name: seq, start: 1 }, new Date()));
  worker = await Worker.start(workerDeps);
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close({ deleteReplyTopic: true })));
  await worker.stop();
  await queries.dropDatabase();
  await store.close();
});

test("5,000 requests in flight from one client: each answered once, every number unique", async () => {
  const client = await connect({ timeoutMs: 60_000 });
  const results = await Promise.all(Array.from({ length: 5000 }, () => client.next(seq)));
  const numbers = results.flatMap((r) => r.numbers);
  expect(numbers.length).toBe(5000);
  expect(new Set(numbers).size).toBe(5000);
  expect(new Set(results.map((r) => r.requestId)).size).toBe(5000);
}, 90_000);

test("Avro requests get Avro replies, decoded to their numbers", async () => {
  const client = await connect({ format: "avro" });
  const rs = await Promise.all(Array.from({ length: 50 }, () => client.next(seq, 3)));
  for (const r of rs) {
    expect(r.numbers.length).toBe(3);
    expect(r.numbers[2]).toBe((r.numbers[0] as bigint) + 2n);
  }
});

test("an error reply rejects with its code", async () => {
  const client = await connect();
  expect(await codeOf(client.next(`nothing-${run}`))).toBe("UNKNOWN_SEQUENCE");
  expect(await codeOf(client.next(seq, 0))).toBe("INVALID_COUNT");
});

test("nobody answering: CLIENT_TIMEOUT at the timeout; pending requests fail with CLIENT_CLOSED at close", async () => {
  const client = await connect({ requestTopic: `client.${run}.unserved`, timeoutMs: 1500 });
  const t0 = Date.now();
  expect(await codeOf(client.next(seq))).toBe("CLIENT_TIMEOUT");
  expect(Date.now() - t0).toBeGreaterThanOrEqual(1400);
  const late = await connect({ requestTopic: `client.${run}.unserved`, timeoutMs: 30_000 });
  const pending = Array.from({ length: 20 }, () => codeOf(late.next(seq)));
  await new Promise((r) => setTimeout(r, 200));
  await late.close({ deleteReplyTopic: true });
  expect(await Promise.all(pending)).toEqual(Array(20).fill("CLIENT_CLOSED"));
  expect(await codeOf(late.next(seq))).toBe("CLIENT_CLOSED");
});
