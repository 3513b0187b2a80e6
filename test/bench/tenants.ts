/**
 * `npm run bench:tenants [-- flags]`: one sequence per tenant (issue #32), as ratios in one run.
 * A store that already holds months of history (reservation and grant records of other
 * sequences), `--created` sequences defined in bulk, then `--asked` of them asked for the first
 * time at `--rate` requests a second, one request each (cold: every one a new counter), then the
 * same again (warm), against 8 sequences paced at the same rate (the reference). The requests come
 * from a librdkafka client outside the project (test/bench/generator-librdkafka.py, Kafka's murmur2
 * partitioner), answered by `--workers` idd worker processes.
 *
 * Flags:
 *   --help              print this and exit
 *   --history N         reservation records and grant records stored first, of 1,000 other sequences (200000)
 *   --created N         sequences defined in bulk before the rounds (100000)
 *   --asked N           of those, how many the cold and warm rounds ask for (10000)
 *   --rate N            requests a second in every round (1000)
 *   --auto-create       ask for --asked sequences nobody defined (IDD_AUTO_CREATE_SEQUENCES=true)
 *                       instead of defined ones
 *   --workers N         idd worker processes (3); request topic of 6 partitions
 * Uses the local stack (started if needed, with IDD_STACK_PORT_BASE / IDD_STACK_DIR) unless the four
 * service variables are set; its own database, dropped at the end.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { Long } from "mongodb";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { pythonExampleVenv } from "../../stack/examples.js";
import { layoutFromEnv } from "../../stack/paths.js";
import { benchServices } from "../support/bench-services.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker } from "../support/workers.js";
import { has, num, unknownFlags } from "./args.js";
import type { RunResult } from "./load-generator.js";
import { RdkGenerator } from "./rdk-generator.js";

const say = (s: string) => process.stdout.write(`${s}\n`);
if (has("help")) {
  const text = readFileSync(new URL(import.meta.url), "utf8");
  say((/\/\*\*\n([\s\S]*?)\n \*\//.exec(text)?.[1] ?? "").replace(/^ \*(?: |$)/gm, ""));
  process.exit(0);
}
const unknown = unknownFlags(["help", "history", "created", "asked", "rate", "auto-create", "workers"]);
if (unknown.length > 0) throw new Error(`unknown flags: ${unknown.join(" ")} (see --help)`);
const history = num("history", 200_000);
const created = num("created", 100_000);
const asked = Math.min(num("asked", 10_000), has("auto-create") ? Number.POSITIVE_INFINITY : created);
const rate = num("rate", 1000);
const workerCount = num("workers", 3);
const run = randomUUID().slice(0, 8);

const { services: all, stop } = await benchServices(say);
const services = ownDatabase(all, `tenants-${run}`);
const store = new Store(services.mongodbUrl);
const queries = new MongoQueries(services.mongodbUrl);

/** Writes `n` documents made by `doc`, 5,000 an insert. */
async function preload(collection: string, n: number, doc: (i: number) => object): Promise<void> {
  for (let i = 0; i < n; i += 5000) {
    const docs = Array.from({ length: Math.min(5000, n - i) }, (_, j) => doc(i + j));
    await queries.collection(collection).insertMany(docs as never, { ordered: false });
  }
}

try {
  await store.ensureIndexes();
  let t = performance.now();
  const at = new Date();
  await preload("reservations", history, (i) => ({
    sequence: `old-${i % 1000}`,
    period: null,
    max: Long.fromNumber(1000 * (1 + Math.floor(i / 1000))),
    epoch: 1,
    worker: "w",
    at,
  }));
  await preload("grants", history, (i) => ({
    _id: `old-${i}`,
    sequence: `old-${i % 1000}`,
    period: null,
    first: Long.fromNumber(100 * i),
    last: Long.fromNumber(100 * i + 99),
    epoch: 1,
    worker: "w",
    at,
  }));
  say(`history: ${history} reservation and ${history} grant records in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const tenant = (i: number) => `tenant-${run}-${i}`;
  t = performance.now();
  const defs = Array.from({ length: created }, (_, i) => defineSequence({ name: tenant(i) }, new Date()));
  await store.createSequences([...defs, ...Array.from({ length: 8 }, (_, i) => defineSequence({ name: `ref-${run}-${i}` }, new Date()))]);
  say(`created ${created} + 8 sequences in bulk in ${((performance.now() - t) / 1000).toFixed(1)} s`);

  const env = {
    ...serviceEnv(services),
    IDD_REQUEST_TOPIC: `tenants.${run}.requests`,
    IDD_DLQ_TOPIC: `tenants.${run}.dlq`,
    IDD_GROUP_ID: `tenants-${run}`,
    IDD_REQUEST_PARTITIONS: "6",
    IDD_HTTP_PORT: "0",
    ...(has("auto-create") && { IDD_AUTO_CREATE_SEQUENCES: "true" }),
  };
  const workers = Array.from({ length: workerCount }, (_, i) => startWorker(`tenants-${run}-w${i + 1}`, env));
  const assigned = () => workers.every((w) => w.log.some((l) => l.includes('"msg":"partitions assigned"')));
  for (let s = 0; s < 120 && !assigned(); s++) await new Promise((r) => setTimeout(r, 1000));
  if (!assigned()) throw new Error("the workers did not join their group within 120 s");
  const python = await pythonExampleVenv(layoutFromEnv(), (l) => say(`venv: ${l}`));
  const askedNames = Array.from({ length: asked }, (_, i) => (has("auto-create") ? `auto-${run}-${i}` : tenant(i)));
  const refNames = Array.from({ length: 8 }, (_, i) => `ref-${run}-${i}`);
  const gen = await RdkGenerator.start({ python, brokers: services.kafkaBrokers, sequences: refNames, partitioner: "murmur2" });
  const seconds = asked / rate;
  const rounds: [string, RunResult][] = [];
  try {
    // The reference is warmed first (its sequences' counters made), then measured.
    await gen.run(env.IDD_REQUEST_TOPIC, { kind: "paced", rate, seconds: 2 });
    rounds.push(["8 sequences, warm", await gen.run(env.IDD_REQUEST_TOPIC, { kind: "paced", rate, seconds })]);
    const plan = { kind: "paced" as const, rate, seconds, sequences: askedNames };
    rounds.push([`${asked} sequences, first request each`, await gen.run(env.IDD_REQUEST_TOPIC, plan)]);
    rounds.push([`${asked} sequences, again`, await gen.run(env.IDD_REQUEST_TOPIC, plan)]);
  } finally {
    await gen.close();
    const rejoined = workers.map((w) => w.log.filter((l) => l.includes("re-joining the group") || l.includes("rejoined the group")).length);
    await Promise.all(workers.map((w) => stopWorker(w)));
    say(`worker lines about rejoining the group: ${rejoined.join(", ")}`);
  }
  const q = (r: RunResult, p: number) => r.latencies[Math.min(r.latencies.length - 1, Math.floor(p * r.latencies.length))] ?? Number.NaN;
  const ref = (rounds[0] as [string, RunResult])[1];
  say(`\n${rate} req/s, ${workerCount} workers, ${history} + ${history} history records, ${created} sequences defined`);
  say("| round | requests | answered OK | errors | missing | p50 ms | p99 ms | p50 / ref | p99 / ref |");
  say("|---|---|---|---|---|---|---|---|---|");
  for (const [name, r] of rounds) {
    const ok = r.answered - r.errors;
    const row = [name, r.requests, ok, r.errors, r.missing, q(r, 0.5).toFixed(1), q(r, 0.99).toFixed(1)];
    say(`| ${row.join(" | ")} | ${(q(r, 0.5) / q(ref, 0.5)).toFixed(2)}× | ${(q(r, 0.99) / q(ref, 0.99)).toFixed(2)}× |`);
    if (r.firstError) say(`  first error: ${r.firstError}`);
  }
} finally {
  await queries.dropDatabase().catch(() => {});
  await store.close();
  await stop();
}
