/**
 * A slow MongoDB (every reply delayed 600 ± 300 ms by toxiproxy, between two idd worker processes
 * and the stack's MongoDB): a wave of new sequences, each needing several MongoDB round trips
 * before its first number, must not cost a worker its group membership (no expulsion, no rejoin,
 * no rebalance), nor the warm sequences their answers. Every request gets an answer: numbers, or
 * UNAVAILABLE (a wait past its budget); none twice.
 *
 * Before a step had a budget (issue #32, item 2), 45–99 of 240 requests (200 new sequences) got
 * no answer within 60 s: the claims a cold step's head start could not finish (the driver's pool
 * checkout timing out) were made one request after another, holding the partition. A step past its
 * budget now answers what would wait UNAVAILABLE. With the consumer's own heartbeats disabled the
 * workers rejoin their group here, so the test also guards the heartbeat.
 *
 * With 1,000 new sequences, the workers' operations still timed out in the driver's pool checkout
 * (a cold pool opens its connections two at a time, each a slow round trip away) until MongoDB's
 * operations were bounded per worker by the connections the pool has (src/storage/in-flight.ts):
 * the rest wait there, within the step budget, and none reaches the driver's queue.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import { IddError } from "../../src/core/errors.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { ensureToxiproxy } from "../../stack/netfaults.js";
import { layoutFromEnv } from "../../stack/paths.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { poll } from "../support/wait.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker, type WorkerProcess } from "../support/workers.js";

const services = ownDatabase(inject("services"), "slow-mongo");
const run = randomUUID().slice(0, 8);
const topic = `slow-mongo.${run}.requests`;
const warm = Array.from({ length: 4 }, (_, i) => `slow-${run}-warm${i}`);
const fresh = Array.from({ length: 1000 }, (_, i) => `slow-${run}-new${i}`);
const store = new Store(services.mongodbUrl);
const workers: WorkerProcess[] = [];
let toxiproxy: ChildProcess | undefined;
let api = "";
let client: IdClient | undefined;

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

async function toxi(method: string, path: string, body: unknown): Promise<void> {
  const r = await fetch(`${api}${path}`, { method, body: JSON.stringify(body), headers: { "content-type": "application/json" } });
  if (!r.ok) throw new Error(`toxiproxy ${method} ${path}: ${r.status} ${await r.text()}`);
}

/** Lines a worker logs when the group dropped it or moved its partitions. */
const churn = (w: WorkerProcess) =>
  w.log.filter((l) => /re-joining the group|rejoined the group|not aware of this member|Kafka consumer crashed for good/.test(l));
/** Lines a worker logs when an operation timed out in the MongoDB driver's own pool checkout queue. */
const poolTimeouts = (w: WorkerProcess) =>
  w.log.filter((l) => l.includes("Timed out while checking out a connection") || l.includes("MongoDB pool checkout timed out"));
const assignedLines = (w: WorkerProcess) => w.log.filter((l) => l.includes('"msg":"partitions assigned"'));

beforeAll(async () => {
  const bin = await ensureToxiproxy(layoutFromEnv());
  const [apiPort, proxyPort] = [await freePort(), await freePort()];
  api = `http://127.0.0.1:${apiPort}`;
  toxiproxy = spawn(bin, ["-host", "127.0.0.1", "-port", String(apiPort)], { stdio: "ignore" });
  if (
    !(await poll(
      () =>
        fetch(`${api}/version`).then(
          (r) => r.ok,
          () => false,
        ),
      { timeoutMs: 15_000 },
    ))
  )
    throw new Error("toxiproxy did not answer");
  const mongo = new URL(services.mongodbUrl);
  await toxi("POST", "/proxies", { name: "mongodb", listen: `127.0.0.1:${proxyPort}`, upstream: mongo.host });
  mongo.host = `127.0.0.1:${proxyPort}`;
  await store.ensureIndexes();
  for (const name of warm) await store.createSequence(defineSequence({ name }, new Date()));
  const env = {
    ...serviceEnv(services),
    MONGODB_URL: mongo.toString(),
    IDD_REQUEST_TOPIC: topic,
    IDD_DLQ_TOPIC: `slow-mongo.${run}.dlq`,
    IDD_GROUP_ID: `slow-mongo-${run}`,
    IDD_REQUEST_PARTITIONS: "4",
    IDD_AUTO_CREATE_SEQUENCES: "true",
    // The shortest session the brokers allow, which a cold step through this MongoDB outlasts: only
    // heartbeats sent while the step waits keep the worker in its group.
    IDD_SESSION_TIMEOUT_MS: "6000",
  };
  for (const i of [1, 2]) workers.push(startWorker(`slow-mongo-${run}-w${i}`, env));
  const joined = () => workers.every((w) => assignedLines(w).length > 0);
  if (!(await poll(joined, { timeoutMs: 60_000 }))) throw new Error("workers not assigned");
  client = await IdClient.connect({ brokers: services.kafkaBrokers, requestTopic: topic, timeoutMs: 60_000 });
  for (const name of warm) await client.next(name, 1); // their counters are made before MongoDB slows down
}, 120_000);

afterAll(async () => {
  await client?.close({ deleteReplyTopic: true });
  await Promise.all(workers.map((w) => stopWorker(w, "SIGKILL")));
  toxiproxy?.kill("SIGKILL");
  await new MongoQueries(services.mongodbUrl).dropDatabase();
  await store.close();
});

test("1,000 new sequences at once through a MongoDB 600 ± 300 ms slow: every request answered, no worker leaves its group", async () => {
  const c = client as IdClient;
  const assignedBefore = workers.map((w) => assignedLines(w).length);
  await toxi("POST", "/proxies/mongodb/toxics", {
    name: "slow",
    type: "latency",
    stream: "downstream",
    attributes: { latency: 600, jitter: 300 },
  });
  const t0 = Date.now();
  const ask = (name: string) =>
    c.next(name, 1).then(
      (r) => ({ name, first: r.ranges[0]?.first }),
      (e: unknown) => ({ name, code: e instanceof IddError ? e.code : String(e) }),
    );
  // The wave of new sequences, and the warm ones asked for throughout it.
  const wave = Promise.all(fresh.map(ask));
  const during: Awaited<ReturnType<typeof ask>>[] = [];
  for (let round = 0; round < 10; round++) during.push(...(await Promise.all(warm.map(ask))));
  const results = [...(await wave), ...during];
  const seconds = (Date.now() - t0) / 1000;
  await toxi("DELETE", "/proxies/mongodb/toxics/slow", undefined).catch(() => {});

  const codes = new Map<string, number>();
  for (const r of results) if ("code" in r) codes.set(r.code, (codes.get(r.code) ?? 0) + 1);
  const ok = results.filter((r) => "first" in r);
  process.stderr.write(
    `slow-mongodb: ${results.length} requests in ${seconds.toFixed(1)} s, ${ok.length} ok, codes ${JSON.stringify(Object.fromEntries(codes))}, pool checkout timeouts logged ${workers.flatMap(poolTimeouts).length}\n`,
  );
  // Answered: numbers or UNAVAILABLE, never a client timeout (a request left unanswered).
  expect([...codes.keys()].filter((k) => k !== "UNAVAILABLE")).toEqual([]);
  expect(during.every((r) => "first" in r)).toBe(true); // warm sequences need no MongoDB round trip
  expect(ok.filter((r) => r.name.includes("-new")).length).toBeGreaterThan(0);
  const seen = new Set(ok.map((r) => `${r.name}#${(r as { first: bigint }).first}`));
  expect(seen.size).toBe(ok.length);
  // MongoDB's operations wait in idd's bounded queue, within the step budget, never in the driver's pool.
  expect(workers.flatMap(poolTimeouts)).toEqual([]);
  // Membership held: no rejoin, no expulsion, no new assignment.
  expect(workers.flatMap(churn)).toEqual([]);
  expect(workers.map((w) => assignedLines(w).length)).toEqual(assignedBefore);
}, 180_000);
