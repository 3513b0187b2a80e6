/**
 * The worker's HTTP surface on the real stack, with a Redis of the test's own: /metrics counts
 * exactly what clients received per sequence (and folds sequences past the label cap into
 * `other`), /healthz answers, and /readyz goes not-ready when Redis stays down past its outage
 * budget and ready again when it is back.
 */
import { randomUUID } from "node:crypto";
import { pino } from "pino";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import { loadConfig } from "../../src/config/config.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { Worker } from "../../src/worker/worker.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { freePort, type PrivateRedis, startPrivateRedis } from "../support/private-redis.js";
import { waitFor } from "../support/wait.js";
import { ownDatabase } from "../support/workers.js";

const base = ownDatabase(inject("services"), "ops");
const run = randomUUID().slice(0, 8);
let redis: PrivateRedis;
let worker: Worker;
let client: IdClient;
let url = "";
const store = new Store(base.mongodbUrl);
const queries = new MongoQueries(base.mongodbUrl);
const sequences = [`ops-${run}-a`, `ops-${run}-b`, `ops-${run}-c`];

beforeAll(async () => {
  redis = await startPrivateRedis();
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  const config = loadConfig(
    {
      IDD_REQUEST_TOPIC: `ops.${run}.requests`,
      IDD_DLQ_TOPIC: `ops.${run}.dlq`,
      IDD_GROUP_ID: `ops-${run}`,
      IDD_REQUEST_PARTITIONS: "2",
      IDD_WORKER_ID: `ops-${run}`,
      IDD_HTTP_PORT: String(port),
      IDD_READY_OUTAGE_BUDGET_MS: "1500",
      IDD_METRICS_MAX_SEQUENCES: "2",
      IDD_REDIS_TIMEOUT_MS: "300",
    },
    { ...base, redisUrl: redis.url },
  );
  for (const name of sequences) await store.createSequence(defineSequence({ name }, new Date()));
  worker = await Worker.start({ config, logger: pino({ level: "silent" }) });
  client = await IdClient.connect({ brokers: base.kafkaBrokers, requestTopic: config.requestTopic, timeoutMs: 30_000 });
}, 120_000);

afterAll(async () => {
  await client?.close();
  await worker?.stop();
  await redis?.stop();
  await queries.dropDatabase();
  await store.close();
});

const get = async (path: string) => {
  const res = await fetch(`${url}${path}`);
  return { status: res.status, text: await res.text() };
};
/** The value of one sample line of the Prometheus text, 0 when absent. */
const sample = (text: string, line: string) => {
  const found = text.split("\n").find((l) => l.startsWith(`${line} `));
  return found ? Number(found.slice(line.length + 1)) : 0;
};

test("/metrics counts exactly what the clients received per sequence; past the label cap, `other`", async () => {
  const received = new Map<string, number>();
  const asks = Array.from({ length: 300 }, (_, i) => ({ sequence: sequences[i % 3] as string, count: 1 + (i % 7) }));
  await Promise.all(
    asks.map(async (a) => {
      const r = await client.next(a.sequence, a.count);
      received.set(a.sequence, (received.get(a.sequence) ?? 0) + r.numbers.length);
    }),
  );
  const { status, text } = await get("/metrics");
  expect(status).toBe(200);
  // Two sequences get a label of their own (IDD_METRICS_MAX_SEQUENCES=2), the third is `other`.
  const labelled = sequences.filter((s) => text.includes(`idd_numbers_total{sequence="${s}"}`));
  expect(labelled).toHaveLength(2);
  const other = sequences.find((s) => !labelled.includes(s)) as string;
  for (const s of labelled) expect(sample(text, `idd_numbers_total{sequence="${s}"}`), s).toBe(received.get(s));
  expect(sample(text, `idd_numbers_total{sequence="other"}`)).toBe(received.get(other));
  const ok = [...labelled, "other"].reduce((n, s) => n + sample(text, `idd_requests_total{sequence="${s}",status="OK"}`), 0);
  expect(ok).toBe(300);
  expect(text).toMatch(/^idd_headroom_numbers\{sequence="ops-/m);
  expect(text).toMatch(/^idd_step_seconds_count \d+/m);
  // Every step is split into its phases, each observed as often as the steps themselves.
  const stepCount = /^idd_step_seconds_count (\d+)/m.exec(text)?.[1];
  for (const phase of ["parse", "issue", "deliver"])
    expect(new RegExp(`^idd_step_phase_seconds_count\\{phase="${phase}"\\} (\\d+)`, "m").exec(text)?.[1]).toBe(stepCount);
  // Each request's wait in Kafka is observed once (at most every record of every step), by who sent
  // it: here every one came from a client, these 300 and earlier tests' requests.
  const records = Number(/^idd_step_records_sum (\d+)/m.exec(text)?.[1]);
  const waited = sample(text, `idd_request_wait_seconds_count{from="client"}`);
  expect(waited).toBeGreaterThanOrEqual(300);
  expect(waited).toBeLessThanOrEqual(records);
  expect(text).not.toMatch(/^idd_request_wait_seconds_count\{from="worker"\}/m);
  expect(text).toMatch(/^idd_process_cpu_user_seconds_total /m);
  expect(sample(text, `idd_breaker_open{dependency="redis"}`)).toBe(0);
  // A MongoDB that keeps up: nothing waits for a connection, nothing is refused or shed.
  expect(sample(text, `idd_mongodb_operations{state="waiting"}`)).toBe(0);
  for (const reason of ["busy", "shed", "pool_timeout"]) expect(sample(text, `idd_mongodb_refused_total{reason="${reason}"}`)).toBe(0);
  expect((await get("/healthz")).status).toBe(200);
  expect((await get("/nope")).status).toBe(404);
});

test("/readyz: ready; not ready once Redis has been down past the budget; ready again when it is back", async () => {
  // Ready with every dependency up: on a loaded machine a probe can time out now and then, and a
  // Redis already counted down (within the budget) would leave the budget before the pause's 1.5 s.
  const up = async () => {
    const r = await get("/readyz");
    const body = JSON.parse(r.text) as { dependencies: { up: boolean }[] };
    return r.status === 200 && body.dependencies.every((d) => d.up);
  };
  await waitFor("ready, every dependency up", up);
  const t0 = Date.now();
  redis.pause(); // hangs: connections stay open, nothing answers
  await waitFor("not ready", async () => (await get("/readyz")).status === 503);
  expect(Date.now() - t0).toBeGreaterThanOrEqual(1500); // not before the budget
  const body = JSON.parse((await get("/readyz")).text) as { dependencies: { name: string; up: boolean }[] };
  expect(body.dependencies.find((d) => d.name === "redis")?.up).toBe(false);
  redis.resume();
  await waitFor("ready again", async () => (await get("/readyz")).status === 200);
  expect((await client.next(sequences[0] as string)).numbers).toHaveLength(1);
}, 60_000);
