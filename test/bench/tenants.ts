/**
 * `npm run bench:tenants [-- flags]`: one sequence per tenant and months of history (issue #32),
 * as ratios in one run. Two pools of `--workers` idd worker processes, running at once and taking
 * turns, each on a MongoDB database of its own and the same Redis and Kafka, are asked by a
 * librdkafka client outside the project (test/bench/generator-librdkafka.py, Kafka's murmur2
 * partitioner):
 *
 * - **empty**: a fresh database;
 * - **history**: one preloaded first with months of another 1,000 sequences' records
 *   (test/bench/tenant-history.ts: `--history` grants and as many samples, `--gapless` gapless
 *   numbers), then `--created` sequences defined in bulk with `idd seq create --from <file>`.
 *
 * Each pool is measured the same way, after two paced warm-ups: 8 sequences paced at `--rate` (warm: the reference), the
 * first request of `--cold` defined sequences at `--rate`, `idd audit`'s work on one of the 8, and
 * one gapless sweep (the first after start-up, then a later one). The history pool then asks
 * `--asked` of the created sequences for the first time at `--rate`, one request each (every one a
 * new counter), and the same again (warm), with Redis's used memory and the workers' resident sets
 * before and after.
 *
 * Flags:
 *   --help              print this and exit
 *   --history N         grants and samples stored first, of 1,000 other sequences (1000000)
 *   --gapless N         gapless numbers stored first, of 100 of those (100000)
 *   --created N         sequences defined in bulk in the history pool (100000)
 *   --asked N           of those, how many its cold and warm rounds ask for (10000)
 *   --cold N            defined sequences asked once in each pool, to compare (1000)
 *   --rate N            requests a second in every round (1000)
 *   --auto-create       the asked sequences are not defined (IDD_AUTO_CREATE_SEQUENCES=true)
 *   --workers N         idd worker processes (3); request topic of 6 partitions
 * Uses the local stack (started if needed, with IDD_STACK_PORT_BASE / IDD_STACK_DIR) unless the four
 * service variables are set; its own databases, dropped at the end.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { pino } from "pino";
import { audit } from "../../src/audit/audit.js";
import { Instrumentation } from "../../src/core/events.js";
import { GaplessSweep } from "../../src/issuing/sources/gapless/gapless-sweep.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { pythonExampleVenv } from "../../stack/examples.js";
import { layoutFromEnv } from "../../stack/paths.js";
import { benchServices } from "../support/bench-services.js";
import { runIdd } from "../support/cli.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker, type WorkerProcess } from "../support/workers.js";
import { has, num, unknownFlags } from "./args.js";
import type { RunResult } from "./load-generator.js";
import { RdkGenerator } from "./rdk-generator.js";
import { historyName, preloadHistory } from "./tenant-history.js";

const say = (s: string) => process.stdout.write(`${s}\n`);
if (has("help")) {
  const text = readFileSync(new URL(import.meta.url), "utf8");
  say((/\/\*\*\n([\s\S]*?)\n \*\//.exec(text)?.[1] ?? "").replace(/^ \*(?: |$)/gm, ""));
  process.exit(0);
}
const unknown = unknownFlags(["help", "history", "gapless", "created", "asked", "cold", "rate", "auto-create", "workers"]);
if (unknown.length > 0) throw new Error(`unknown flags: ${unknown.join(" ")} (see --help)`);
const history = num("history", 1_000_000);
const gaplessHistory = num("gapless", 100_000);
const created = num("created", 100_000);
const asked = Math.min(num("asked", 10_000), has("auto-create") ? Number.POSITIVE_INFINITY : created);
const coldCount = num("cold", 1000);
const rate = num("rate", 1000);
const workerCount = num("workers", 3);
const run = randomUUID().slice(0, 8);

const { services: all, stop } = await benchServices(say);
const redis = new Redis(all.redisUrl);
const python = await pythonExampleVenv(layoutFromEnv(), (l) => say(`venv: ${l}`));

const q = (r: RunResult, p: number) => r.latencies[Math.min(r.latencies.length - 1, Math.floor(p * r.latencies.length))] ?? Number.NaN;
const seconds = async <T>(work: () => Promise<T>): Promise<[number, T]> => {
  const t = performance.now();
  const out = await work();
  return [(performance.now() - t) / 1000, out];
};
const redisMb = async () => Number(/used_memory:(\d+)/.exec(await redis.info("memory"))?.[1]) / 2 ** 20;
const rssMb = (pid: number | undefined) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024;

interface Pool {
  label: "empty" | "history";
  store: Store;
  queries: MongoQueries;
  topic: string;
  workers: WorkerProcess[];
  ref: string[];
  cold: string[];
  tenants: string[];
  names: (what: string, n: number) => string[];
}

interface Measured {
  warm: RunResult;
  cold: RunResult;
  auditS: number;
  sweepFirstS: number;
  sweepLaterS: number;
}

/** A pool on its own database: its history (for `history`), its sequences, its workers, joined. */
async function prepare(label: Pool["label"]): Promise<Pool> {
  const services = ownDatabase(all, `tenants-${run}-${label}`);
  const store = new Store(services.mongodbUrl, { socketTimeoutMS: 600_000 });
  const queries = new MongoQueries(services.mongodbUrl);
  const names = (what: string, n: number) => Array.from({ length: n }, (_, i) => `${label}-${run}-${what}-${i}`);
  const p: Pool = {
    label,
    store,
    queries,
    topic: `tenants.${run}.${label}.requests`,
    workers: [],
    ref: names("ref", 8),
    cold: names("cold", coldCount),
    tenants: names("tenant", created),
    names,
  };
  pools.push(p);
  await store.ensureIndexes();
  if (label === "history") {
    await preloadHistory(store, { grants: history, samples: history, gaplessNumbers: gaplessHistory }, say);
    const dir = mkdtempSync(join(tmpdir(), "idd-tenants-"));
    const file = join(dir, "tenants.jsonl");
    writeFileSync(file, p.tenants.map((name) => JSON.stringify({ name })).join("\n"));
    const [s, r] = await seconds(() => runIdd(["seq", "create", "--from", file], serviceEnv(services)));
    rmSync(dir, { recursive: true, force: true });
    if (r.status !== 0) throw new Error(`idd seq create --from failed (${r.status}): ${r.stderr.slice(-2000)}`);
    say(`history: ${created} sequences created with idd seq create --from in ${s.toFixed(1)} s`);
  }
  const now = new Date();
  await store.createSequences([...p.ref, ...p.cold].map((name) => defineSequence({ name }, now)));
  await store.createSequence(defineSequence({ name: `${label}-${run}-gapless`, gapless: true }, now));
  const env = {
    ...serviceEnv(services),
    IDD_REQUEST_TOPIC: p.topic,
    IDD_DLQ_TOPIC: `tenants.${run}.${label}.dlq`,
    IDD_GROUP_ID: `tenants-${run}-${label}`,
    IDD_REQUEST_PARTITIONS: "6",
    IDD_HTTP_PORT: "0",
    ...(has("auto-create") && { IDD_AUTO_CREATE_SEQUENCES: "true" }),
  };
  p.workers = Array.from({ length: workerCount }, (_, i) => startWorker(`tenants-${run}-${label}-w${i + 1}`, env));
  const assigned = () => p.workers.every((w) => w.log.some((l) => l.includes('"msg":"partitions assigned"')));
  for (let s = 0; s < 120 && !assigned(); s++) await new Promise((r) => setTimeout(r, 1000));
  if (!assigned()) throw new Error(`the ${label} pool did not join its group within 120 s`);
  return p;
}

/** A pool's 8 warm sequences, paced. */
const warmRun = (p: Pool, gen: RdkGenerator) =>
  gen.run(p.topic, { kind: "paced", rate, seconds: Math.max(5, asked / rate), sequences: p.ref });

/** The first answers of a pool's cold sequences, an audit of one warm sequence and two gapless sweeps. */
async function coldAuditSweep(p: Pool, gen: RdkGenerator): Promise<Omit<Measured, "warm">> {
  const cold = await gen.run(p.topic, { kind: "paced", rate, seconds: coldCount / rate, sequences: p.cold });
  const [auditS] = await seconds(() => audit(p.store, { sequence: p.ref[0] as string, settleMs: 0, onGap: () => {} }));
  const sweep = new GaplessSweep({
    store: p.store,
    worker: "bench",
    everyMs: 3_600_000,
    clock: Date.now,
    events: new Instrumentation(),
    logger: pino({ level: "silent" }),
  });
  const [sweepFirstS] = await seconds(() => sweep.run());
  const [sweepLaterS] = await seconds(() => sweep.run());
  return { cold, auditS, sweepFirstS, sweepLaterS };
}

/** The history pool's 10,000 new counters and the same again, with memory around them. */
async function tenantRounds(p: Pool, gen: RdkGenerator): Promise<{ rounds: [string, RunResult][]; memory: string[] }> {
  const memory: string[] = [];
  const rounds: [string, RunResult][] = [];
  const askedNames = has("auto-create") ? p.names("auto", asked) : p.tenants.slice(0, asked);
  const plan = { kind: "paced" as const, rate, seconds: asked / rate, sequences: askedNames };
  const mem = async (when: string) =>
    memory.push(
      `${when}: Redis ${(await redisMb()).toFixed(1)} MB, workers ${p.workers.map((w) => rssMb(w.proc.pid).toFixed(0)).join(", ")} MB`,
    );
  await mem("before");
  rounds.push([`${asked} sequences, first request each`, await gen.run(p.topic, plan)]);
  await mem(`after ${asked} new counters`);
  rounds.push([`${asked} sequences, again`, await gen.run(p.topic, plan)]);
  await mem("after the same again");
  const [old] = await seconds(() => audit(p.store, { sequence: historyName(0), settleMs: 0, onGap: () => {} }));
  memory.push(`idd audit of ${historyName(0)} (${Math.round(history / 900)} grants of history): ${old.toFixed(2)} s`);
  return { rounds, memory };
}

const pools: Pool[] = [];
try {
  const gen = await RdkGenerator.start({ python, brokers: all.kafkaBrokers, sequences: ["unused"], partitioner: "murmur2" });
  let e: Measured;
  let l: Measured;
  let tenants: Awaited<ReturnType<typeof tenantRounds>>;
  let rejoined: string;
  try {
    const loadedPool = await prepare("history");
    const emptyPool = await prepare("empty");
    // Both pools run at once and take turns, so machine noise falls on both. A target's first paced
    // runs are slow (test/bench/open-loop.ts: 100–400× its later ones), and so was whichever pool
    // went first when they ran one after the other (3× slower warm, history or empty): two paced
    // warm-ups each, then the rounds.
    for (let i = 0; i < 2; i++)
      for (const p of [emptyPool, loadedPool]) await gen.run(p.topic, { kind: "paced", rate, seconds: 3, sequences: p.ref });
    const emptyWarm = await warmRun(emptyPool, gen);
    const loadedWarm = await warmRun(loadedPool, gen);
    l = { warm: loadedWarm, ...(await coldAuditSweep(loadedPool, gen)) };
    e = { warm: emptyWarm, ...(await coldAuditSweep(emptyPool, gen)) };
    tenants = await tenantRounds(loadedPool, gen);
    const churn = (p: Pool) =>
      p.workers.map((w) => w.log.filter((l) => l.includes("re-joining the group") || l.includes("rejoined the group")).length);
    rejoined = `empty ${churn(emptyPool).join(", ")}; history ${churn(loadedPool).join(", ")}`;
  } finally {
    await gen.close();
    for (const p of pools) await Promise.all(p.workers.map((w) => stopWorker(w)));
  }
  const row = (name: string, a: number, b: number, unit: string, digits = 1) =>
    say(`| ${name} | ${a.toFixed(digits)} ${unit} | ${b.toFixed(digits)} ${unit} | ${(b / a).toFixed(2)}× |`);
  say(
    `\n${rate} req/s, ${workerCount} workers; history: ${history} grants, ${history} samples, ${gaplessHistory} gapless numbers, ${created} sequences defined`,
  );
  say("| measure | empty store | history store | history / empty |");
  say("|---|---|---|---|");
  row("8 sequences warm, p50", q(e.warm, 0.5), q(l.warm, 0.5), "ms");
  row("8 sequences warm, p99", q(e.warm, 0.99), q(l.warm, 0.99), "ms");
  row(`${coldCount} sequences' first answer, p50`, q(e.cold, 0.5), q(l.cold, 0.5), "ms");
  row(`${coldCount} sequences' first answer, p99`, q(e.cold, 0.99), q(l.cold, 0.99), "ms");
  row("idd audit of one of the 8", e.auditS, l.auditS, "s", 2);
  row("gapless sweep, first after start", e.sweepFirstS, l.sweepFirstS, "s", 2);
  row("gapless sweep, later", e.sweepLaterS, l.sweepLaterS, "s", 2);
  say(`worker lines about rejoining the group: ${rejoined}`);

  const refRun = l.warm;
  say(`\nthe history pool, ${created} sequences defined`);
  say("| round | requests | answered OK | errors | missing | answered/s | p50 ms | p99 ms | p50 / ref | p99 / ref |");
  say("|---|---|---|---|---|---|---|---|---|---|");
  for (const [name, r] of [["8 sequences, warm (ref)", refRun] as [string, RunResult], ...tenants.rounds]) {
    const perSecond = ((r.answered / r.elapsedMs) * 1000).toFixed(0);
    const cells = [name, r.requests, r.answered - r.errors, r.errors, r.missing, perSecond, q(r, 0.5).toFixed(1), q(r, 0.99).toFixed(1)];
    say(`| ${cells.join(" | ")} | ${(q(r, 0.5) / q(refRun, 0.5)).toFixed(2)}× | ${(q(r, 0.99) / q(refRun, 0.99)).toFixed(2)}× |`);
    if (r.firstError) say(`  first error: ${r.firstError}`);
  }
  for (const m of tenants.memory) say(m);
} finally {
  for (const p of pools) {
    await p.queries.dropDatabase().catch(() => {});
    await p.store.close();
  }
  redis.disconnect();
  await stop();
}
