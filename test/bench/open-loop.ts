/**
 * The open-loop section of `npm run bench` (`--only open-loop`): capacity, not latency. A raw
 * kafkajs load generator (test/bench/load-generator.ts) publishes single-number requests whether
 * or not earlier ones were answered — bursts of N requests, and paced runs at fixed rates — against
 * up to three targets on the same broker, each on a request topic of its own:
 *
 *  - echo: 3 echo-service processes (test/bench/echo.ts), the upper limit of a kafkajs service;
 *  - idd: 3 idd worker processes (auto-created sequences, default settings otherwise), loaded by a
 *    generator on Kafka's Java partitioner (murmur2), so every request lands on its sequence's home
 *    partition;
 *  - echo-rdk: 3 librdkafka echo processes (test/bench/echo-librdkafka.py, confluent-kafka in the
 *    examples' Python venv): the limit of request/reply on this broker with a C client;
 *  - echo-plt (only when asked for): 3 echo processes on @platformatic/kafka
 *    (test/bench/echo-platformatic.ts) on Node 24 from stack/node-lines.mjs: how far a pure
 *    TypeScript client that fetches ahead of its handling gets;
 *  - idd-crc32: the same kind of idd pool, loaded by a second generator on librdkafka's default
 *    partitioner (consistent_random: CRC-32 of the key), as Python, Go, .NET or C clients are: the
 *    requests of (partitions − 1) / partitions of the sequences (the names are chosen so) land off
 *    home and cost a forward (one more produce and fetch);
 *  - idd-standalone, idd-sentinel, idd-cluster (only when asked for): the idd pool on murmur2
 *    clients, its Redis one of its own: standalone, a primary under Sentinel or a Redis Cluster
 *    (test/bench/redis-topologies.ts): idd-sentinel/idd-standalone and idd-cluster/idd-standalone
 *    are the cost of each topology.
 *  - idd-gzip, idd-snappy, idd-lz4, idd-zstd (only when asked for): the idd pool on murmur2
 *    clients whose request batches are compressed with that codec: against idd, what reading the
 *    codec costs in requests a second and CPU per request.
 *  - idd-base (`--base DIR`): idd workers from another checkout (e.g. `git worktree add --detach
 *    /tmp/idd-base main`, node_modules linked), loaded like idd: an A/B in one run, idd/idd-base.
 *
 * Scenarios: bursts; paced runs on the warm sequences; "cold": a paced run on sequences created
 * (in MongoDB, for idd) just before it, measured from the first request, no warm-up on them; "jump":
 * a paced run whose first sequence's rate jumps tenfold a third of the way in, its latencies those
 * of the requests from the jump on. For idd pools the step phases (parse, issue, deliver) of each
 * run are read from the workers' /metrics (test/bench/phases.ts).
 *
 * Per scenario and target: requests and numbers a second (first publish to last reply), latency
 * percentiles, CPU seconds per 10,000 requests of the target's processes, of the Kafka broker, of
 * Redis + MongoDB and of the generator itself, and every request's reply count (duplicates,
 * missing). The targets take turns, so machine noise falls on all; the ratios idd/echo,
 * idd-crc32/echo and idd-crc32/idd are the result (the last one is the cost of routing).
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type { ServiceSettings } from "../../src/config/services.js";
import { homePartition } from "../../src/protocol/home-partition.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { CODEC_IDS, compressionProblem } from "../../src/transport/kafka/codecs.js";
import { pythonExampleVenv } from "../../stack/examples.js";
import { layoutFromEnv, REPO_ROOT } from "../../stack/paths.js";
import { librdkafkaDefault } from "../support/partitioners.js";
import { LoadGenerator, type Plan, type RunResult, spreadSequences } from "./load-generator.js";
import { printOpenLoopTable } from "./open-loop-table.js";
import { type PhaseTotals, phasesBetween, printPhases, readPhases } from "./phases.js";
import { cpuOf } from "./proc-cpu.js";
import { summarizeAllocations, summarizeProfiles } from "./profile-summary.js";
import { RdkGenerator } from "./rdk-generator.js";
import { type RedisTopologies, redisTopologies, TOPOLOGY_TARGETS, type TopologyTarget } from "./redis-topologies.js";
import type { StackPids } from "./stack-pids.js";
import { profileEnv, startEchoPool, startIddPool, type Target } from "./targets.js";

export interface OpenLoopOptions {
  /** Burst sizes, e.g. [100_000, 1_000_000]. */
  bursts: number[];
  /** Backlog sizes: published while the target's processes are stopped (SIGSTOP), then drained; run last. */
  backlogs: number[];
  /** Paced rates in requests a second, e.g. [1000, 2000, 4000]. */
  rates: number[];
  /** Paced rates on sequences created just before the run (cold). */
  coldRates: number[];
  /** Paced rates at which one sequence's rate jumps by `jumpFactor` a third of the way in. */
  jumpRates: number[];
  jumpFactor: number;
  pacedSeconds: number;
  /** Burst sent to each target first, not reported. */
  warmup: number;
  targets: OpenLoopTarget[];
  partitions: number;
  processes: number;
  /** Sequences the requests go to, round-robin (rounded up to a multiple of the partitions). */
  sequences: number;
  /** Pause between runs, seconds. */
  settleSeconds: number;
  idleTimeoutSeconds: number;
  /** Extra environment for the idd workers (e.g. IDD_DEDUPE_WINDOW_MS=0). */
  iddEnv: NodeJS.ProcessEnv;
  /** idd-base: the checkout its workers run from (A/B against this one). */
  baseDir?: string;
  /** idd-base: the node binary its workers run on (default: this process's). */
  baseNode?: string;
  /** Write CPU profiles of the targets' processes here, and summarize them at the end. */
  profileDir?: string;
  /**
   * Who publishes the requests: librdkafka (test/bench/generator-librdkafka.py, a client from
   * outside the project, the default) or kafkajs (test/bench/load-generator.ts, which also runs
   * backlogs and compressed batches).
   */
  generator: "librdkafka" | "kafkajs";
}

/** What publishes a target's requests and reads their replies. */
type Generator = Pick<LoadGenerator, "run" | "createTopic" | "deleteTopics" | "close" | "stray"> & {
  /** CPU seconds the generator has used so far. */
  cpuSeconds(): number;
};

const inProcess = (g: LoadGenerator): Generator =>
  Object.assign(g, {
    cpuSeconds: () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1e6;
    },
  });

/** A Node 24 binary (installed into the cache on first use by stack/node-lines.mjs). */
const node24 = (): string =>
  join(execFileSync(process.execPath, [join(REPO_ROOT, "stack/node-lines.mjs"), "bin", "24"], { encoding: "utf8" }).trim(), "node");

const outside = (g: RdkGenerator): Generator => Object.assign(g, { cpuSeconds: () => cpuOf([g.pid]) });

/** idd loaded by murmur2 clients whose request batches are compressed with one codec each: against idd, the cost of reading it. */
const COMPRESSED_TARGETS = ["idd-gzip", "idd-snappy", "idd-lz4", "idd-zstd"] as const;
type CompressedTarget = (typeof COMPRESSED_TARGETS)[number];
const isCompressed = (name: string): name is CompressedTarget => (COMPRESSED_TARGETS as readonly string[]).includes(name);

/** What the open loop can load: the kafkajs and librdkafka echoes, idd on murmur2 clients, idd on librdkafka-default (CRC-32) clients, idd from another checkout, idd on Redis topologies. */
export const OPEN_LOOP_TARGETS = [
  "echo",
  "echo-rdk",
  "echo-plt",
  "idd",
  "idd-crc32",
  "idd-base",
  "idd-base-crc32",
  ...TOPOLOGY_TARGETS,
  ...COMPRESSED_TARGETS,
] as const;
/** Targets loaded by clients on librdkafka's default partitioner (most requests forwarded home). */
const onCrc32 = (name: string) => name.endsWith("-crc32");
/** Targets whose workers come from the checkout of --base. */
const fromBase = (name: string) => name.startsWith("idd-base");
export type OpenLoopTarget = (typeof OPEN_LOOP_TARGETS)[number];

export interface Measured {
  scenario: string;
  target: string;
  r: RunResult;
  /** idd pools: where their step time went during the run. */
  phases?: PhaseTotals;
  /** CPU seconds during the run. */
  cpu: { target: number; broker: number | undefined; deps: number | undefined; generator: number };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const count = (n: number) => (n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : `${n}`);
type Scenario = Plan | { kind: "backlog"; requests: number } | { kind: "cold"; rate: number; seconds: number };
const label = (p: Scenario) =>
  p.kind === "paced"
    ? `${p.jump ? "jump" : "paced"} ${p.rate}/s`
    : p.kind === "cold"
      ? `cold ${p.rate}/s`
      : `${p.kind} ${count(p.requests)}`;

export async function openLoop(
  services: ServiceSettings,
  pids: StackPids,
  say: (line: string) => void,
  o: OpenLoopOptions,
): Promise<Measured[]> {
  const run = randomUUID().slice(0, 8);
  const plans: Scenario[] = [
    ...o.bursts.map((n): Scenario => ({ kind: "burst", requests: n })),
    ...o.rates.map((rate): Scenario => ({ kind: "paced", rate, seconds: o.pacedSeconds })),
    ...o.coldRates.map((rate): Scenario => ({ kind: "cold", rate, seconds: o.pacedSeconds })),
    ...o.jumpRates.map(
      (rate): Scenario => ({ kind: "paced", rate, seconds: o.pacedSeconds, jump: { atSeconds: o.pacedSeconds / 3, factor: o.jumpFactor } }),
    ),
    ...o.backlogs.map((n): Scenario => ({ kind: "backlog", requests: n })),
  ];
  say(
    `open loop: ${plans.map(label).join(", ")}${o.rates.length > 0 ? ` (paced runs ${o.pacedSeconds} s)` : ""}; ` +
      `targets ${o.targets.join(", ")}, ${o.processes} processes each, ${o.partitions} request partitions, ` +
      `${Math.max(1, Math.ceil(o.sequences / o.partitions)) * o.partitions} sequences`,
  );
  // Names spread evenly over their home partitions, and chosen so that librdkafka-default clients
  // send a fixed share of them off home: (partitions - 1) / partitions, what a random name does on
  // average (otherwise the share, and idd-crc32's result, would change from run to run).
  const perPartition = Math.max(1, Math.ceil(o.sequences / o.partitions));
  const names = (prefix: string) => {
    const onHomeMax = perPartition; // of perPartition × partitions names, 1 in partitions
    let onHome = 0;
    let offHome = 0;
    return spreadSequences(prefix, o.partitions, perPartition, (name, home) => {
      const off = librdkafkaDefault(Buffer.from(name, "utf8"), o.partitions) !== home;
      if (off ? offHome >= perPartition * o.partitions - onHomeMax : onHome >= onHomeMax) return false;
      if (off) offHome++;
      else onHome++;
      return true;
    });
  };
  const sequences = names(`ol-${run}`);
  /**
   * The warm sequences of `t`: each idd target its own, since pools of two targets on one set
   * would fence each other (their gens are of different request topics) and fail both runs.
   */
  const ownSequences = new Map<string, string[]>();
  const sequencesOf = (t: Target): string[] | undefined => {
    if (!t.metricsUrls) return undefined;
    const own = ownSequences.get(t.name) ?? names(`ol-${run}-${t.name}`);
    ownSequences.set(t.name, own);
    return own;
  };
  let store: Store | undefined;
  /** Fresh sequence names for a cold run of `t`, created in MongoDB now when `t` is idd. */
  const coldSequences = async (t: Target, i: number): Promise<string[]> => {
    const fresh = names(`cold-${run}-${i}-${t.name}`);
    if (t.metricsUrls) {
      store ??= new Store(services.mongodbUrl);
      await store.createSequences(fresh.map((name) => defineSequence({ name }, new Date())));
    }
    return fresh;
  };
  const generatorOptions = { brokers: services.kafkaBrokers, sequences, idleTimeoutMs: o.idleTimeoutSeconds * 1000, progress: say };
  let python: string | undefined;
  const venv = async () => {
    python ??= await pythonExampleVenv(layoutFromEnv(), (l) => say(`  python: ${l}`));
    return python;
  };
  const generator = async (partitioner: "murmur2" | "crc32"): Promise<Generator> =>
    o.generator === "librdkafka"
      ? outside(await RdkGenerator.start({ ...generatorOptions, python: await venv(), partitioner }))
      : inProcess(await LoadGenerator.start({ ...generatorOptions, ...(partitioner === "crc32" && { partitioner: librdkafkaDefault }) }));
  say(`  generator: ${o.generator === "librdkafka" ? "librdkafka (confluent-kafka, test/bench/generator-librdkafka.py)" : "kafkajs"}`);
  const gen = await generator("murmur2");
  // The -crc32 targets' requests come from a generator of their own, on librdkafka's default partitioner.
  let crcGen: Generator | undefined;
  if (o.targets.some(onCrc32)) {
    crcGen = await generator("crc32");
    const away = sequences.filter((s) => librdkafkaDefault(Buffer.from(s, "utf8"), o.partitions) !== homePartition(s, o.partitions));
    say(
      `  idd-crc32 (idd, librdkafka-default clients): ${away.length} of ${sequences.length} sequences land off their ` +
        `home partition, so ${((away.length / sequences.length) * 100).toFixed(0)}% of its requests are forwarded`,
    );
  }
  // Each compressed target's requests come from a generator of their own, compressing with its codec.
  const compressedGens = new Map<string, Generator>();
  for (const name of o.targets.filter(isCompressed)) {
    const codec = name.slice("idd-".length) as "gzip" | "snappy" | "lz4" | "zstd";
    const problem = compressionProblem(codec);
    if (problem) throw new Error(`target ${name}: ${problem}`);
    compressedGens.set(name, inProcess(await LoadGenerator.start({ ...generatorOptions, compression: CODEC_IDS[codec] })));
  }
  const generatorOf = (t: Target) => (onCrc32(t.name) ? (crcGen as Generator) : (compressedGens.get(t.name) ?? gen));
  const isTopology = (name: string): name is TopologyTarget => (TOPOLOGY_TARGETS as readonly string[]).includes(name);
  const topologies: RedisTopologies | undefined = o.targets.some(isTopology) ? await redisTopologies(say) : undefined;
  const profiling = o.profileDir ? profileEnv(o.profileDir) : {};
  const results: Measured[] = [];
  const stopped: Target[] = [];
  let generation = 0;
  /** A fresh pool of `name` on a request topic of its own, warmed up. */
  const start = async (name: OpenLoopTarget): Promise<Target> => {
    const t0 = performance.now();
    // The dot after the name keeps one target's profile files apart from another's (idd, idd-crc32).
    const prefix = `bench.${run}.${name}.${++generation}`;
    let t: Target;
    if (name === "echo") {
      await gen.createTopic(`${prefix}.requests`, o.partitions);
      t = await startEchoPool(services.kafkaBrokers, `${prefix}.requests`, o.partitions, o.processes, profiling);
    } else if (name === "echo-rdk") {
      await gen.createTopic(`${prefix}.requests`, o.partitions);
      t = await startEchoPool(
        services.kafkaBrokers,
        `${prefix}.requests`,
        o.partitions,
        o.processes,
        {},
        {
          client: "librdkafka",
          python: await venv(),
        },
      );
    } else if (name === "echo-plt") {
      await gen.createTopic(`${prefix}.requests`, o.partitions);
      t = await startEchoPool(services.kafkaBrokers, `${prefix}.requests`, o.partitions, o.processes, profiling, {
        client: "platformatic",
        node: node24(),
      });
    } else {
      if (fromBase(name) && !o.baseDir) throw new Error(`the ${name} target needs --base DIR (another checkout)`);
      const redisEnv = isTopology(name) ? topologies?.env[name] : {};
      const pool = await startIddPool(
        services,
        prefix,
        o.partitions,
        o.processes,
        { ...o.iddEnv, ...profiling, ...redisEnv },
        (why) => say(`  ${name}: a worker failed to start, starting the pool again: ${why.replaceAll("\n", " | ").slice(0, 400)}`),
        fromBase(name) ? o.baseDir : undefined,
        fromBase(name) ? o.baseNode : undefined,
      );
      t = { ...pool, name };
    }
    say(`  ${name}: ${o.processes} processes ready in ${((performance.now() - t0) / 1000).toFixed(1)} s (${t.requestTopic})`);
    if (o.warmup > 0) {
      const own = sequencesOf(t);
      const r = await generatorOf(t).run(t.requestTopic, { kind: "burst", requests: o.warmup, ...(own && { sequences: own }) });
      say(`  warm-up ${name}: ${o.warmup} requests, ${((r.answered / r.elapsedMs) * 1000).toFixed(0)} req/s, ${r.missing} missing`);
      // And paced, as the runs are: the first paced run after burst warm-ups alone was 100–400×
      // slower than the same target's later ones (the librdkafka echo: p50 1.8–3.1 s first, 4–6 ms later).
      const rate = o.rates[0];
      if (rate !== undefined) {
        const p = await generatorOf(t).run(t.requestTopic, { kind: "paced", rate, seconds: 3, ...(own && { sequences: own }) });
        say(
          `  warm-up ${name}: paced ${rate}/s for 3 s, p50 ${(p.latencies[Math.floor(p.latencies.length / 2)] ?? Number.NaN).toFixed(1)} ms`,
        );
      }
      await sleep(o.settleSeconds * 1000);
    }
    return t;
  };
  const stop = async (t: Target) => {
    stopped.push(t);
    for (const l of await t.stop()) say(`  ${t.name} stopped: ${l.slice(0, 300)}`);
  };
  const targets: Target[] = [];
  try {
    for (const name of o.targets) targets.push(await start(name));

    const standalone = [pids.redis, pids.mongodb].filter((p): p is number => p !== undefined);
    // The Redis a target's workers use: the topology's processes (and the same MongoDB) for those targets.
    const depsOf = (t: Target) =>
      isTopology(t.name) && topologies ? [...topologies.pids[t.name], ...(pids.mongodb === undefined ? [] : [pids.mongodb])] : standalone;
    // A scenario given twice (--bursts 100000,100000: a repeat) is told apart by its number.
    const labels = plans.map((p, i) => {
      const l = label(p);
      const n = plans.slice(0, i).filter((q) => label(q) === l).length;
      return n > 0 ? `${l} #${n + 1}` : l;
    });
    for (const [i, scenario] of plans.entries()) {
      // Take turns: the first target of one scenario goes second in the next.
      const order = i % 2 === 0 ? [...targets] : [...targets].reverse();
      for (const t of order) {
        const deps = depsOf(t);
        const plan: Plan | { kind: "backlog"; requests: number } =
          scenario.kind === "cold"
            ? { kind: "paced", rate: scenario.rate, seconds: scenario.seconds, sequences: await coldSequences(t, i) }
            : { ...scenario, ...(sequencesOf(t) && { sequences: sequencesOf(t) }) };
        const phases0 = t.metricsUrls ? await readPhases(t.metricsUrls) : undefined;
        const before = {
          target: cpuOf(t.pids),
          broker: pids.kafka === undefined ? undefined : cpuOf([pids.kafka]),
          deps: deps.length > 0 ? cpuOf(deps) : undefined,
          generator: generatorOf(t).cpuSeconds(),
        };
        const signal = (sig: NodeJS.Signals) => () => {
          for (const pid of t.pids) process.kill(pid, sig);
        };
        const r = await generatorOf(t).run(
          t.requestTopic,
          plan.kind === "backlog" ? { ...plan, hold: signal("SIGSTOP"), release: signal("SIGCONT") } : plan,
        );
        const cpu = {
          target: cpuOf(t.pids) - before.target,
          broker: before.broker === undefined ? undefined : cpuOf([pids.kafka as number]) - before.broker,
          deps: before.deps === undefined ? undefined : cpuOf(deps) - before.deps,
          generator: generatorOf(t).cpuSeconds() - before.generator,
        };
        const m: Measured = {
          scenario: labels[i] as string,
          target: t.name,
          r: r.window ? { ...r, latencies: r.window } : r,
          ...(phases0 && { phases: phasesBetween(phases0, await readPhases(t.metricsUrls as string[])) }),
          cpu,
        };
        results.push(m);
        say(
          `  ${m.scenario.padEnd(12)} ${t.name.padEnd(9)} ${((r.answered / r.elapsedMs) * 1000).toFixed(0).padStart(7)} req/s in ` +
            `${(r.elapsedMs / 1000).toFixed(1)} s, published at ${((r.requests / r.publishMs) * 1000).toFixed(0)} req/s` +
            `${plan.kind === "paced" ? ` (generator lag ≤ ${r.lagMs.toFixed(0)} ms)` : ""}; ` +
            `${r.duplicates} duplicate, ${r.missing} missing, ${r.errors} errors${r.firstError ? ` (first: ${r.firstError})` : ""}`,
        );
        if (r.missing > 0 && i < plans.length - 1) {
          // Its backlog did not drain: it would burn CPU under the other target's runs and answer
          // none of the next ones. Later runs get a fresh pool on a fresh topic.
          say(`  ${t.name}: ${r.missing} requests unanswered; replacing its pool for the next runs`);
          const at = targets.indexOf(t);
          targets.splice(at, 1);
          await stop(t);
          targets.splice(at, 0, await start(t.name as OpenLoopTarget));
        }
        await sleep(o.settleSeconds * 1000);
      }
    }
  } finally {
    for (const t of targets) await stop(t);
    const stray = gen.stray + (crcGen?.stray ?? 0);
    if (stray > 0) say(`  ${stray} replies arrived after their run had ended (late, or to a warm-up)`);
    await gen.deleteTopics(stopped.flatMap((t) => [t.requestTopic, t.requestTopic.replace(/\.requests$/, ".dlq")]));
    await crcGen?.close();
    for (const g of compressedGens.values()) await g.close();
    await gen.close();
    await store?.close();
    await topologies?.stop();
  }
  printOpenLoopTable(results, say);
  printPhases(
    results.flatMap((m) => (m.phases ? [{ scenario: m.scenario, target: m.target, phases: m.phases }] : [])),
    say,
  );
  if (o.profileDir) {
    for (const name of o.targets.filter((n) => n !== "echo-rdk")) {
      say("");
      say(`CPU profile of ${name} (every pool of the run, warm-ups included), in ${o.profileDir}:`);
      const prefix = name.startsWith("echo") ? `echo-bench.${run}.${name}.` : `bench.${run}.${name}.`;
      summarizeProfiles(o.profileDir, prefix, say);
      summarizeAllocations(o.profileDir, prefix, say);
    }
  }
  return results;
}
