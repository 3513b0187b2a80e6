/**
 * A rolling upgrade from the last release with `idd:marker` (bdf4665, before per-sequence hash tags)
 * to this one, with real processes (design §5.15, docs/recovery.md: Upgrading from a release with idd:marker).
 * Old workers run from a checkout of that commit made from this repository's history; clients
 * load several sequences; new workers start beside the old ones, which are then stopped one by one.
 * Every reply is collected: no number twice, causal order kept across the switch (G1, G2), and every
 * request answered or failed with a code of the error table. What the clients saw during the switch
 * (codes, the longest wait per sequence) is printed and written to test-artifacts/upgrade.json.
 * Redis is the test's own: the new release deletes the old layout's global `idd:marker`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import { ErrorCodes, isIddError } from "../../src/core/errors.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { REPO_ROOT } from "../../stack/paths.js";
import { checkHistory, type Issued } from "../support/history.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { type OldCheckout, oldCheckout } from "../support/old-checkout.js";
import { freePort, type PrivateRedis, startPrivateRedis } from "../support/private-redis.js";
import { sleep } from "../support/wait.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker, type WorkerProcess } from "../support/workers.js";

/** The last release before the per-sequence layout. */
const OLD_RELEASE = "bdf4665";

const run = Math.random().toString(36).slice(2, 10);
const names = Array.from({ length: 6 }, (_, i) => `upgrade-${run}-${i}`);
const workers: WorkerProcess[] = [];
const clients: IdClient[] = [];
let old: OldCheckout | undefined;
let redis: PrivateRedis | undefined;
let services: ReturnType<typeof ownDatabase>;

beforeAll(async () => {
  old = oldCheckout(OLD_RELEASE);
  redis = await startPrivateRedis();
  services = { ...ownDatabase(inject("services"), "upgrade"), redisUrl: redis.url };
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(workers.map((w) => stopWorker(w, "SIGKILL")));
  mkdirSync(join(REPO_ROOT, "test-artifacts"), { recursive: true });
  for (const w of workers) writeFileSync(join(REPO_ROOT, "test-artifacts", `upgrade-${w.id}.log`), `${w.log.join("\n")}\n`);
  if (services) await new MongoQueries(services.mongodbUrl).dropDatabase();
  await redis?.stop();
  old?.remove();
}, 60_000);

interface Outcome {
  sequence: string;
  sentAt: number;
  receivedAt: number;
  code: string | null;
}

test("old workers replaced one by one under load: 0 duplicates, 0 order violations, every request answered or coded", async () => {
  const root = old?.root as string;
  const env = {
    ...serviceEnv(services),
    IDD_REQUEST_TOPIC: `upgrade.${run}.requests`,
    IDD_DLQ_TOPIC: `upgrade.${run}.dlq`,
    IDD_GROUP_ID: `upgrade-${run}`,
    IDD_REQUEST_PARTITIONS: "6",
    IDD_MIN_BLOCK: "10",
    IDD_INITIAL_BLOCK: "20",
  };
  const store = new Store(services.mongodbUrl);
  for (const name of names) await store.createSequence(defineSequence({ name }, new Date()));
  await store.close();
  const start = async (id: string, from: string) => {
    const w = startWorker(id, { ...env, IDD_HTTP_PORT: String(await freePort()) }, from);
    workers.push(w);
    return w;
  };
  const [old1, old2] = [await start("old-w1", root), await start("old-w2", root)];
  await Promise.all([old1.assigned, old2.assigned]);
  for (let i = 0; i < 2; i++)
    clients.push(await IdClient.connect({ brokers: services.kafkaBrokers, requestTopic: env.IDD_REQUEST_TOPIC, timeoutMs: 30_000 }));

  const t0 = performance.now();
  const history: Issued[] = [];
  const outcomes: Outcome[] = [];
  let stop = false;
  const load = Promise.all(
    names.map(async (sequence, i) => {
      const client = clients[i % clients.length] as IdClient;
      for (let round = 0; !stop; round++) {
        const sentAt = performance.now() - t0;
        try {
          const r = await client.next(sequence, 1 + (round % 3));
          const receivedAt = performance.now() - t0;
          history.push({ sequence, period: r.period, ranges: r.ranges, sentAt, receivedAt });
          outcomes.push({ sequence, sentAt, receivedAt, code: null });
        } catch (e) {
          outcomes.push({ sequence, sentAt, receivedAt: performance.now() - t0, code: isIddError(e) ? e.code : `untyped: ${String(e)}` });
          await sleep(100);
        }
      }
    }),
  );
  const phases: Record<string, number> = {};
  const mark = (what: string) => {
    phases[what] = Math.round(performance.now() - t0);
  };
  await sleep(6000);
  mark("new workers started");
  const [new1, new2] = [await start("new-w1", REPO_ROOT), await start("new-w2", REPO_ROOT)];
  await Promise.all([new1.assigned, new2.assigned]);
  mark("new workers assigned");
  await sleep(5000);
  mark("old-w1 stopped");
  await stopWorker(old1);
  await sleep(8000);
  mark("old-w2 stopped");
  await stopWorker(old2);
  await sleep(15_000);
  mark("load stopped");
  stop = true;
  await load;

  // What the clients saw: codes, and per sequence the longest wait for an answer with numbers.
  const codes: Record<string, number> = {};
  for (const o of outcomes) if (o.code) codes[o.code] = (codes[o.code] ?? 0) + 1;
  const stalls = names.map((sequence) => {
    const answered = outcomes.filter((o) => o.sequence === sequence && o.code === null).sort((a, b) => a.receivedAt - b.receivedAt);
    let longest = { s: 0, from: 0 };
    for (let i = 1; i < answered.length; i++) {
      const gap = ((answered[i] as Outcome).receivedAt - (answered[i - 1] as Outcome).receivedAt) / 1000;
      if (gap > longest.s) longest = { s: Math.round(gap * 10) / 10, from: Math.round((answered[i - 1] as Outcome).receivedAt) };
    }
    return { sequence, answered: answered.length, longestWaitS: longest.s, fromMs: longest.from };
  });
  const report = checkHistory(history);
  const summary = { phasesMs: phases, requests: outcomes.length, answered: history.length, numbers: report.numbers, codes, stalls };
  mkdirSync(join(REPO_ROOT, "test-artifacts"), { recursive: true });
  writeFileSync(join(REPO_ROOT, "test-artifacts", "upgrade.json"), `${JSON.stringify(summary, null, 2)}\n`);
  console.log(`rolling upgrade from ${OLD_RELEASE}: ${JSON.stringify(summary)}`);

  expect(report.duplicates).toEqual([]);
  expect(report.orderViolations).toEqual([]);
  for (const code of Object.keys(codes)) expect(code in ErrorCodes, `${code} is not in the error table`).toBe(true);
  // After the last old worker stopped, the new ones answer every sequence.
  const after = (phases["old-w2 stopped"] as number) + 10_000;
  for (const sequence of names)
    expect(
      outcomes.some((o) => o.sequence === sequence && o.code === null && o.sentAt > after),
      sequence,
    ).toBe(true);
}, 300_000);
