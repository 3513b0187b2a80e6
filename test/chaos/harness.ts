/**
 * The fault-injection engine behind `npm run chaos` and test/chaos/chaos.test.ts.
 *
 * A private local stack (its own folder and ports, so faults never disturb other tests), a pool of
 * real `idd worker` processes, sustained load from several IdClients, and a schedule of faults from
 * the failure model in docs/design.md (§5), one module each in phases/: SIGKILL, SIGSTOP past the
 * session timeout, Redis restarted empty or flushed (the workers restore what they need by themselves),
 * MongoDB down, the Kafka broker restarted, scale out and in — plus an open-loop burst (`overload`)
 * and a stream of hostile requests (`hostile`) from a plain kafkajs producer, each with checks of
 * its own. Every reply is kept (records.ts); at the end evaluate.ts checks the whole history for
 * G1, G2, G4 and G5. After each fault the harness waits until one probe request per sequence
 * succeeds and records how long that took.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { pino } from "pino";
import { IdClient } from "../../src/client/id-client.js";
import { fromVars, type ServiceSettings } from "../../src/config/services.js";
import { IddError } from "../../src/core/errors.js";
import { homePartition } from "../../src/protocol/home-partition.js";
import { Store } from "../../src/storage/store.js";
import { createKafka, type KeyPartitioner } from "../../src/transport/kafka/index.js";
import { kafkaHome } from "../../stack/install.js";
import { type Host, type Netfaults, setupNetfaults } from "../../stack/netfaults.js";
import { KAFKA_NODES, SENTINEL_GROUP, type ServiceName } from "../../stack/paths.js";
import { down, type RunAs, up } from "../../stack/stack.js";
import type { CounterAudit, ReserveSettings } from "../support/gaps.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { librdkafkaDefault } from "../support/partitioners.js";
import { sleep, withTimeout } from "../support/wait.js";
import { serviceEnv } from "../support/workers.js";
import { auditSequences, type SequenceAudit } from "./audit-check.js";
import { type ChaosCluster, chaosClusterLayout, chaosDir, startCluster } from "./cluster-services.js";
import { evaluate, readAudit } from "./evaluate.js";
import {
  auditGapless,
  GAPLESS_SWEEP_MS,
  type GaplessAudit,
  gaplessAuditFailures,
  gaplessLoop,
  type Settlement,
  showGaplessAudit,
} from "./gapless.js";
import { type BrokerCutContext, brokerCut } from "./phases/broker-cut.js";
import { clockSkew } from "./phases/clock-skew.js";
import { clockStart } from "./phases/clock-start.js";
import { clusterFailover } from "./phases/cluster-failover.js";
import type { ClusterFaultContext } from "./phases/cluster-faults.js";
import { hostile } from "./phases/hostile.js";
import { kafkaLeader } from "./phases/kafka-leader.js";
import { kafkaRestart } from "./phases/kafka-restart.js";
import { kill } from "./phases/kill.js";
import { type LinkFaultContext, linkCut, linkLatency } from "./phases/link-faults.js";
import { LoneWorker } from "./phases/lone-worker.js";
import { mongodbOutage } from "./phases/mongodb-outage.js";
import { overload } from "./phases/overload.js";
import { pause } from "./phases/pause.js";
import type { RawPhaseContext } from "./phases/raw-traffic.js";
import { redisCluster } from "./phases/redis-cluster.js";
import { redisFlushall } from "./phases/redis-flushall.js";
import { redisPause } from "./phases/redis-pause.js";
import { redisRestart } from "./phases/redis-restart.js";
import { scale } from "./phases/scale.js";
import { sentinelFailover } from "./phases/sentinel-failover.js";
import { splitBrain } from "./phases/split-brain.js";
import { alive, showGroup, stopLeftoverWorkers, WorkerPool } from "./pool.js";
import { chaosLayout, StackControl, takeLock } from "./private-stack.js";
import { type FaultKind, PROFILES, type Profile, scaledProfile } from "./profiles.js";
import { type PhaseState, RequestLog } from "./records.js";
import type { ChaosOptions, ChaosResult } from "./results.js";
import { type ChaosSequences, createSequences, zoneBeforeMidnight } from "./sequences.js";

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export async function runChaos(opts: ChaosOptions = {}): Promise<ChaosResult> {
  const profileName = opts.profile ?? "short";
  const profile = scaledProfile(PROFILES[profileName], opts.hostileScale ?? 1);
  const skip = new Set(opts.skip ?? []);
  const schedule = profile.schedule.filter((k) => !skip.has(k));
  const seed = opts.seed ?? Math.floor(Math.random() * 2 ** 31);
  const random = mulberry32(seed);
  const requestTimeoutMs = opts.requestTimeoutMs ?? 15_000;
  const t0 = Date.now();
  const say = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const log = (line: string) => say(`chaos [${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${line}`);

  // The cluster profile runs on the cluster's services (handed in, or started here); the others on a private stack.
  const onCluster = profile.services === "cluster";
  // The network profile: the cluster stack's folder and ports, its processes partly under the hosts of stack/netfaults.ts.
  const onNetwork = profile.services === "network";
  let netfaults: Netfaults | undefined;
  let networkStarted: Parameters<typeof down>[0] | undefined;
  let cluster: ChaosCluster | undefined = opts.cluster;
  let stopCluster: (() => Promise<void>) | undefined;
  const layout = chaosLayout(opts);
  const clusterLayout = cluster?.layout ?? chaosClusterLayout(opts);
  const stackDir = onCluster || onNetwork ? chaosDir(clusterLayout) : layout.dir;
  const workerLogDir = join(stackDir, "workers");
  const stackProgress = (line: string) => log(`stack: ${line}`);

  const run = randomUUID().slice(0, 8);
  const requests = new RequestLog();
  const clients: IdClient[] = [];
  /** Phases in which a worker was SIGKILLed (its unlogged blocks may show as gaps, G4). */
  const killPhases = new Set<number>();
  let audit: Map<string, CounterAudit> | undefined;
  let auditError: string | undefined;
  let stuckAtStop: string[] = [];
  let audits: SequenceAudit[] | undefined;
  const unhandled: string[] = [];
  let stopping = false;
  let loadStart = 0;
  let loadEnd = 0;
  let probeClient: IdClient | undefined;
  let ticker: NodeJS.Timeout | undefined;
  let settings: ServiceSettings | undefined;
  let pool: WorkerPool | undefined;

  const onUnhandled = (reason: unknown) => {
    const text = reason instanceof IddError ? `${reason.code}: ${reason.message}` : String((reason as Error)?.message ?? reason);
    unhandled.push(text);
    if (unhandled.length <= 3) log(`unhandled promise rejection (not from the harness): ${text}`);
  };
  process.on("unhandledRejection", onUnhandled);
  // Should this process exit mid-run (Ctrl-C, process.exit), take the workers along.
  const killWorkers = () => pool?.killAll();
  process.on("exit", killWorkers);

  let sequences: ChaosSequences | undefined;
  const sequenceNames: string[] = [];
  /** Reply topics of the raw phases (overload, hostile), and one that never exists. */
  const rawTopics = {
    overload: `chaos.${run}.overload-replies`,
    hostile: `chaos.${run}.hostile-replies`,
    clock: `chaos.${run}.clock-replies`,
    missing: `chaos.${run}.nowhere`,
  };

  const loadLoop = async (client: IdClient, sequence: string): Promise<void> => {
    while (!stopping) {
      const count = random() < 0.85 ? 1 : 2 + Math.floor(random() * 49);
      const r = await requests.request(client, sequence, count, false, requestTimeoutMs);
      if (r.code !== undefined) await sleep(100); // error replies come fast: do not spin on them
    }
  };
  /** The gapless sequence's settlements (test/chaos/gapless.ts), and its audits after each phase. */
  const settlements: Settlement[] = [];
  let gaplessEnd: GaplessAudit | undefined;
  const probeAll = (timeoutMs: number) =>
    requests.probeAll(probeClient as IdClient, sequences ? [...sequenceNames, sequences.gapless] : sequenceNames, timeoutMs);
  /** idd audit over the gapless sequence, now: its line in the phase's notes, and what it must not show. */
  const auditGaplessNow = async (p: PhaseState): Promise<void> => {
    if (!sequences || !settings) return;
    const store = new Store(settings.mongodbUrl);
    try {
      const a = await auditGapless(store, sequences.gapless, Date.now());
      p.notes.push(showGaplessAudit(sequences.gapless, a));
      p.failures.push(...gaplessAuditFailures(a));
    } catch (e) {
      p.failures.push(`idd audit of the gapless sequence failed: ${(e as Error).message}`);
    } finally {
      await store.close().catch(() => {});
    }
  };

  const notRun: string[] = [];
  const lock = takeLock(stackDir); // before anything is stopped: the stack may belong to a run in progress
  try {
    // ── the services: a private stack from a clean slate, or the cluster profile's ──
    log(`profile ${profileName}, seed ${seed}, schedule: ${schedule.join(" ")}`);
    if (!onCluster && !onNetwork) {
      log(
        `private stack in ${stackDir}, ports ${layout.ports.redis} (redis) ${layout.ports.kafka} (kafka) ${layout.ports.mongodb} (mongodb) ${layout.ports.registry} (registry)`,
      );
      await down({ layout, progress: stackProgress }); // leftovers of an interrupted run
    }
    const leftovers = stopLeftoverWorkers(stackDir);
    if (leftovers.length > 0) log(`stopped ${leftovers.length} worker processes left by an interrupted run (pids ${leftovers.join(", ")})`);
    // The last run's worker and stack logs are kept, in previous/, for reading after a second run.
    const previous = join(stackDir, "previous");
    rmSync(previous, { recursive: true, force: true });
    mkdirSync(previous, { recursive: true });
    for (const entry of readdirSync(stackDir)) {
      const path = join(stackDir, entry);
      if (path === lock || path === previous) continue;
      if (entry === "workers" || entry === "logs") renameSync(path, join(previous, entry));
      else rmSync(path, { recursive: true, force: true });
    }
    mkdirSync(workerLogDir, { recursive: true });
    const tUp = Date.now();
    let services: ServiceSettings;
    let stack: StackControl | undefined;
    /** The workers' Redis topology variables (the cluster profile starts them on Sentinel). */
    let redisVars: NodeJS.ProcessEnv = {};
    if (onNetwork) {
      // Before the services: removes the rules and host processes an interrupted run left.
      netfaults = await setupNetfaults({ layout: clusterLayout, table: "idd_netfaults_chaos", progress: stackProgress });
      const nf = netfaults;
      const side = (h: Host) => nf.identity(h);
      const runAs: RunAs = Object.fromEntries(SENTINEL_GROUP.map((s) => [s, side(s === "redis-primary" ? "side-a" : "side-b")]));
      // With kafkaHosts: the cluster stack's three Kafka nodes, each as a host of its own (the broker cuts).
      const brokerHosts = profile.kafkaHosts ?? [];
      for (const [i, h] of brokerHosts.entries()) runAs[KAFKA_NODES[i] as ServiceName] = side(h);
      if (brokerHosts.length > 0) nf.allow([kafkaHome(clusterLayout)], stackProgress);
      const kafkaServices: ServiceName[] = brokerHosts.length > 0 ? [...KAFKA_NODES] : ["kafka"];
      const wanted: ServiceName[] = [...kafkaServices, "mongodb", "registry", ...SENTINEL_GROUP];
      const r = await up({ layout: clusterLayout, services: wanted, progress: stackProgress, runAs });
      networkStarted = { layout: clusterLayout, services: r.started, progress: stackProgress };
      if (!r.cluster) throw new Error(`the Sentinel group in ${clusterLayout.dir} wrote no endpoints`);
      redisVars = { REDIS_SENTINELS: r.cluster.REDIS_SENTINELS, REDIS_SENTINEL_MASTER: r.cluster.REDIS_SENTINEL_MASTER };
      services = fromVars(
        {
          KAFKA_BROKERS: (brokerHosts.length > 0 && r.cluster.KAFKA_BROKERS) || r.env.KAFKA_BROKERS,
          REDIS_URL: "redis://127.0.0.1:1",
          MONGODB_URL: r.env.MONGODB_URL,
          SCHEMA_REGISTRY_URL: r.env.SCHEMA_REGISTRY_URL,
          ...redisVars,
        },
        clusterLayout.dir,
      );
      log(
        `network profile in ${clusterLayout.dir} (up in ${((Date.now() - tUp) / 1000).toFixed(1)} s): ${brokerHosts.length > 0 ? `brokers ${r.cluster.KAFKA_BROKERS} as ${brokerHosts.map((h) => `idd-${h}`).join(", ")}` : `broker ${r.env.KAFKA_BROKERS}`}, Sentinels ${r.cluster.REDIS_SENTINELS}; P as ${"idd-side-a"} (uid ${side("side-a").uid}), Q and the Sentinels as idd-side-b (uid ${side("side-b").uid})`,
      );
    } else if (onCluster) {
      if (!cluster) {
        const started = await startCluster(clusterLayout, stackProgress);
        cluster = started.cluster;
        stopCluster = started.stop;
      }
      const c = cluster.env;
      redisVars = { REDIS_SENTINELS: c.REDIS_SENTINELS, REDIS_SENTINEL_MASTER: c.REDIS_SENTINEL_MASTER };
      services = fromVars(
        {
          KAFKA_BROKERS: c.KAFKA_BROKERS as string,
          // Never connected to: under Sentinel and Cluster only REDIS_URL's credentials and TLS count.
          REDIS_URL: "redis://127.0.0.1:1",
          MONGODB_URL: cluster.mongodbUrl,
          SCHEMA_REGISTRY_URL: cluster.schemaRegistryUrl,
          ...redisVars,
        },
        clusterLayout.dir,
      );
      log(
        `cluster profile in ${clusterLayout.dir} (up in ${((Date.now() - tUp) / 1000).toFixed(1)} s): brokers ${c.KAFKA_BROKERS}, Sentinels ${c.REDIS_SENTINELS} (master ${c.REDIS_SENTINEL_MASTER}), Redis Cluster ${c.REDIS_CLUSTER_NODES}; run files in ${stackDir}`,
      );
    } else {
      services = fromVars((await up({ layout, progress: stackProgress })).env, stackDir);
      const control = new StackControl(layout, services, stackProgress);
      stack = control;
      log(`stack up in ${((Date.now() - tUp) / 1000).toFixed(1)} s`);
      const r = control.redis();
      try {
        const save = (await r.config("GET", "save")) as string[];
        const aof = (await r.config("GET", "appendonly")) as string[];
        log(`redis persistence: save "${save[1]}", appendonly ${aof[1]} (must be "" and no: a restart comes back empty)`);
      } finally {
        r.disconnect();
      }
    }
    settings = services;

    const workerEnv: NodeJS.ProcessEnv = {
      ...serviceEnv(services),
      ...redisVars,
      IDD_REQUEST_TOPIC: `chaos.${run}.requests`,
      IDD_DLQ_TOPIC: `chaos.${run}.dlq`,
      IDD_GROUP_ID: `chaos-${run}`,
      IDD_REQUEST_PARTITIONS: "6",
      IDD_SESSION_TIMEOUT_MS: "6000",
      IDD_HEARTBEAT_MS: "500",
      // Small blocks and reservations, so both turn over many times during the run.
      IDD_OBFUSCATION_KEYS: `1:${Buffer.alloc(32, 9).toString("base64")}`,
      IDD_MIN_BLOCK: "10",
      IDD_INITIAL_BLOCK: "50",
      IDD_TARGET_BLOCK_MS: "2000",
      IDD_MIN_RESERVATION: "2000",
      IDD_RESERVE_LOW_MS: String(RESERVE.lowMs),
      IDD_RESERVE_AHEAD_MS: String(RESERVE.aheadMs),
      IDD_GAPLESS_SWEEP_MS: String(GAPLESS_SWEEP_MS),
    };
    const workers = new WorkerPool({
      stackDir,
      workerLogDir,
      env: workerEnv,
      brokers: services.kafkaBrokers,
      random,
      log,
      phaseName: () => requests.phases.at(-1)?.name,
      onKill: () => killPhases.add(requests.current()),
    });
    pool = workers;

    // ── sequences, before the workers ──
    const store = new Store(services.mongodbUrl);
    try {
      // The network profile's clock faults: a daily sequence whose midnight falls while the lone
      // worker's clock runs an hour ahead (roughly when that step comes), homed with the snowflake.
      const links = onNetwork ? profile.links : undefined;
      const midnight = links && {
        zone: zoneBeforeMidnight(Date.now() + untilClockAhead(profile)),
        home: (name: string) => homePartition(name, Number(workerEnv.IDD_REQUEST_PARTITIONS)),
      };
      sequences = await createSequences(store, run, opts.sequences ?? 10, midnight);
    } finally {
      await store.close();
    }
    sequenceNames.push(...sequences.names);
    log(
      `${sequenceNames.length + 1} sequences created (${sequences.daily} daily in ${sequences.zones.join(", ")}, 1 obfuscated, 1 snowflake, 1 gapless): ${sequenceNames.join(" ")} ${sequences.gapless}`,
    );

    // ── reply topics of the raw phases, before the workers: a worker's metadata snapshot must know them ──
    // Through the seam's ensureTopics: on a fresh cluster kafkajs's own leader wait can read a broker
    // that does not know the new topics yet ("does not host this topic-partition").
    {
      const kafka = createKafka({ clientId: "idd-chaos-setup", brokers: services.kafkaBrokers });
      try {
        await kafka.ensureTopics([
          { topic: rawTopics.overload, partitions: 6 },
          { topic: rawTopics.hostile, partitions: 3 },
          { topic: rawTopics.clock, partitions: 1 },
        ]);
      } finally {
        await kafka.close();
      }
    }

    // ── workers ──
    const nWorkers = opts.workers ?? (onNetwork ? 4 : 3);
    const hostAs = (h: Host) => {
      if (!netfaults) throw new Error("no network-fault harness in this profile");
      return { ...netfaults.identity(h), host: h };
    };
    // The network profile: half the workers on side A (with P), half on side B (with Q and the Sentinels).
    for (let i = 0; i < nWorkers; i++) workers.start(onNetwork ? hostAs(i % 2 === 0 ? "side-a" : "side-b") : undefined);
    await workers.firstAssignment(workers.workers, "the workers' first assignment");
    log(`${nWorkers} workers assigned: ${showGroup(await workers.groupView())}`);

    // ── clients and load ──
    const nClients = opts.clients ?? 4;
    const loops = opts.loops ?? 20;
    // The clients' kafkajs warnings and errors go to clients.log: a client that stops hearing replies
    // (e.g. its reply consumer not back after a broker restart) leaves its reasons there.
    const clientLog = pino({ level: "warn", base: {} }, pino.destination({ dest: join(stackDir, "clients.log"), sync: true }));
    const connect = (name: string, partitioner?: KeyPartitioner) =>
      IdClient.connect({
        brokers: services.kafkaBrokers,
        requestTopic: workerEnv.IDD_REQUEST_TOPIC,
        logger: clientLog.child({ client: name }),
        ...(partitioner && { partitioner }),
      });
    // Every other client partitions like librdkafka's default (CRC-32), as Python or Go services
    // would: their requests reach workers that do not issue the sequence and are forwarded home,
    // under every fault, and the two kinds of client share sequences (docs/wire-contract.md: Routing).
    for (let i = 0; i < nClients; i++) clients.push(await connect(`c${i + 1}`, i % 2 === 1 ? librdkafkaDefault : undefined));
    probeClient = await connect("probe");
    requests.phases.push({ name: "warmup", kind: "warmup", injectAt: Date.now(), recovered: true, notes: [], failures: [] });
    loadStart = performance.now();
    const load = clients.flatMap((c, ci) =>
      Array.from({ length: loops }, (_, i) => loadLoop(c, sequenceNames[(ci * loops + i) % sequenceNames.length] as string)),
    );
    // Each client also takes and settles gapless numbers, in a loop of its own.
    const gaplessSequence = sequences.gapless;
    load.push(
      ...clients.map((c) =>
        gaplessLoop(c, gaplessSequence, requests, settlements, {
          random,
          timeoutMs: requestTimeoutMs,
          stopping: () => stopping,
          sleep,
        }),
      ),
    );
    log(
      `load: ${nClients} clients × ${loops} loops (${Math.floor(nClients / 2)} on librdkafka's default partitioner), request timeout ${requestTimeoutMs} ms`,
    );

    let lastCount = 0;
    let lastAt = performance.now();
    ticker = setInterval(() => {
      const now = performance.now();
      const recent = requests.records.slice(lastCount);
      const errs = recent.filter((r) => r.code !== undefined).length;
      log(
        `  … ${((recent.length * 1000) / (now - lastAt)).toFixed(0)} req/s, ${errs} errors in the last ${((now - lastAt) / 1000).toFixed(0)} s; workers alive: ${workers.workers
          .filter(alive)
          .map((w) => w.id + (w.paused ? "(stopped)" : ""))
          .join(" ")}`,
      );
      lastCount = requests.records.length;
      lastAt = now;
    }, 10_000);
    ticker.unref();

    /** What the raw phases need: topics, the history, worker logs, a client for fresh requests. */
    const raw = (replyTopic: string, replyPartitions: number): RawPhaseContext => ({
      brokers: services.kafkaBrokers,
      requestTopic: workerEnv.IDD_REQUEST_TOPIC as string,
      requestPartitions: Number(workerEnv.IDD_REQUEST_PARTITIONS),
      dlqTopic: workerEnv.IDD_DLQ_TOPIC as string,
      replyTopic,
      replyPartitions,
      missingTopic: rawTopics.missing,
      sequences: sequenceNames,
      random,
      log,
      record: (r) => requests.add(r),
      crashMark: () => workers.crashMark(),
      fresh: async (n, timeoutMs) => {
        // In waves of one request per sequence, through the probe client: how fast a new request is answered now.
        const latencies: number[] = [];
        const failures: string[] = [];
        for (let sent = 0; sent < n; ) {
          const wave = sequenceNames.slice(0, Math.min(sequenceNames.length, n - sent));
          sent += wave.length;
          for (const r of await Promise.all(wave.map((s) => requests.request(probeClient as IdClient, s, 1, true, timeoutMs)))) {
            if (r.code === undefined) latencies.push(r.receivedAt - r.sentAt);
            else failures.push(`${r.sequence}: ${r.code}`);
          }
        }
        return { latencies, failures };
      },
    });
    /** The private stack, for the faults that act on it (not on the cluster profile). */
    const privateStack = (): StackControl => {
      if (!stack) throw new Error("this fault needs the private single-node stack, not the cluster profile");
      return stack;
    };
    /** The cluster profile's services, for its faults. */
    const onClusterCtx = (): ClusterFaultContext & { c: ChaosCluster } => {
      if (!cluster) throw new Error("this fault needs the cluster profile's services (--profile cluster)");
      return { c: cluster, layout: cluster.layout, probeAll: () => probeAll(profile.recoverTimeoutMs) };
    };
    const lost = () => ({ stack: privateStack(), redisLostMs: profile.redisLostMs, log });
    const exits = () => workers.unexpectedExits.length;
    /** The network profile's lone worker (phases/lone-worker.ts), started by the first phase that needs it. */
    let lone: LoneWorker | undefined;
    const linkCtx = (): LinkFaultContext => {
      const nf = netfaults;
      if (!nf || !profile.links || !sequences) throw new Error("link and clock faults need the network profile (--profile network)");
      lone ??= new LoneWorker({
        nf,
        pool: workers,
        host: "h1",
        ports: {
          redis: [clusterLayout.ports.redisPrimary, clusterLayout.ports.redisReplica, ...clusterLayout.ports.sentinels],
          kafka: services.kafkaBrokers.map((b) => Number(b.slice(b.lastIndexOf(":") + 1))),
          mongodb: [clusterLayout.ports.mongodb],
        },
        dir: stackDir,
        snowflake: sequences.snowflake,
        partitions: Number(workerEnv.IDD_REQUEST_PARTITIONS),
        log,
      });
      return { nf, lone, settings: profile.links, log };
    };
    /** The broker cuts (phases/broker-cut.ts): the network profile on three brokers, each as a host of its own. */
    const brokerCtx = (): BrokerCutContext => {
      const hosts = profile.kafkaHosts;
      if (!netfaults || !hosts || hosts.length !== KAFKA_NODES.length)
        throw new Error("broker cuts need the network profile on three brokers (kafkaHosts)");
      return {
        nf: netfaults,
        brokers: services.kafkaBrokers,
        hosts,
        requestTopic: workerEnv.IDD_REQUEST_TOPIC as string,
        partitions: Number(workerEnv.IDD_REQUEST_PARTITIONS),
        groupId: workerEnv.IDD_GROUP_ID as string,
        sequences: sequenceNames,
        cutMs: profile.brokerCutMs ?? 30_000,
        probeAll: () => probeAll(profile.recoverTimeoutMs),
        log,
      };
    };
    /** inject → optional heal; each returns once its fault has been healed. */
    const faults: Record<FaultKind, (p: PhaseState) => Promise<void>> = {
      kill: (p) => kill(p, { pool: workers }),
      pause: (p) => pause(p, { pool: workers, pauseMs: profile.pauseMs }),
      "redis-pause": (p) => redisPause(p, { stack: privateStack(), redisPauseMs: profile.redisPauseMs }),
      "redis-restart": (p) => redisRestart(p, lost()),
      "redis-flushall": (p) => redisFlushall(p, lost()),
      "mongodb-outage": (p) => mongodbOutage(p, { stack: privateStack(), mongodbOutageMs: profile.mongodbOutageMs }),
      "kafka-restart": (p) => kafkaRestart(p, { stack: privateStack() }),
      scale: (p) => scale(p, { pool: workers, calmMs: profile.calmMs }),
      overload: (p) => overload(p, { raw: raw(rawTopics.overload, 6), settings: profile.overload, exits }),
      hostile: (p) => hostile(p, { raw: raw(rawTopics.hostile, 3), settings: profile.hostile, exits }),
      "kafka-leader": (p) =>
        kafkaLeader(p, {
          ...onClusterCtx(),
          requestTopic: workerEnv.IDD_REQUEST_TOPIC as string,
          partitions: Number(workerEnv.IDD_REQUEST_PARTITIONS),
          sequences: sequenceNames,
        }),
      "sentinel-failover": (p) => sentinelFailover(p, { ...onClusterCtx(), lagMs: profile.lagMs ?? 3000 }),
      "redis-cluster": (p) => {
        const { c } = onClusterCtx();
        const env = {
          ...workerEnv,
          REDIS_SENTINELS: undefined,
          REDIS_SENTINEL_MASTER: undefined,
          REDIS_CLUSTER_NODES: c.env.REDIS_CLUSTER_NODES,
        };
        return redisCluster(p, { pool: workers, env });
      },
      "cluster-failover": (p) => clusterFailover(p, { ...onClusterCtx(), sequences: sequenceNames }),
      "split-brain": (p) => {
        if (!netfaults) throw new Error("split-brain needs the network profile (--profile network)");
        return splitBrain(p, {
          nf: netfaults,
          pool: workers,
          layout: clusterLayout,
          partitionMs: profile.partitionMs ?? 30_000,
          moveAfterMs: profile.moveAfterMs ?? 10_000,
          sideA: "side-a",
          sideB: "side-b",
          zombieMs: profile.zombieMs ?? 0,
          kafkaPorts: services.kafkaBrokers.map((b) => Number(b.slice(b.lastIndexOf(":") + 1))),
          as: hostAs,
          log,
        });
      },
      "broker-cut": (p) => brokerCut(p, brokerCtx(), "broker-cut"),
      "coordinator-cut": (p) => brokerCut(p, brokerCtx(), "coordinator-cut"),
      "broker-isolated": (p) => brokerCut(p, brokerCtx(), "broker-isolated"),
      "redis-cut": (p) => linkCut(p, linkCtx(), "redis"),
      "mongodb-cut": (p) => linkCut(p, linkCtx(), "mongodb"),
      "kafka-cut": (p) => linkCut(p, linkCtx(), "kafka"),
      "redis-latency": (p) => linkLatency(p, linkCtx(), "redis"),
      "kafka-latency": (p) => linkLatency(p, linkCtx(), "kafka"),
      "clock-start": (p) => {
        if (!netfaults || !sequences || !profile.startClocks) throw new Error("clock-start needs the network profile (--profile network)");
        return clockStart(p, {
          nf: netfaults,
          pool: workers,
          host: "h1",
          ...profile.startClocks,
          snowflake: sequences.snowflake,
          partitions: Number(workerEnv.IDD_REQUEST_PARTITIONS),
          zones: sequences.zones,
          raw: raw(rawTopics.clock, 1),
          // The gapless numbers it takes are never settled: they expire while a wrong-clock worker sweeps.
          asked: [sequences.snowflake, sequences.midnight, sequences.gapless].filter((s): s is string => s !== undefined),
          log,
        });
      },
      "clock-skew": (p) => {
        const { lone: l, settings } = linkCtx();
        const asked = [sequences?.snowflake, sequences?.midnight].filter((s): s is string => s !== undefined);
        return clockSkew(p, { lone: l, settings: settings.clock, zones: sequences?.zones ?? [], raw: raw(rawTopics.clock, 1), asked, log });
      },
    };

    await sleep(profile.warmupMs);
    if (!(await probeAll(profile.recoverTimeoutMs))) throw new Error("the pool never answered every sequence before the first fault");

    // ── the schedule ──
    const counts = new Map<FaultKind, number>();
    const names = schedule.map((kind) => {
      const n = (counts.get(kind) ?? 0) + 1;
      counts.set(kind, n);
      return `${kind}#${n}`;
    });
    for (const [i, kind] of schedule.entries()) {
      const p: PhaseState = { name: names[i] as string, kind, injectAt: Date.now(), recovered: false, notes: [], failures: [] };
      requests.phases.push(p);
      log(`phase ${p.name} (${i + 1}/${schedule.length}): start`);
      try {
        await faults[kind](p);
      } catch (e) {
        p.notes.push(`fault step failed: ${(e as Error).message}`);
        log(`  fault step failed: ${(e as Error).message}`);
      }
      p.healedAt ??= Date.now();
      p.recovered = await probeAll(profile.recoverTimeoutMs);
      if (p.recovered) p.recoveredAt = Date.now();
      else p.notes.push(requests.lastSeconds(10, sequenceNames));
      if (p.recovered) await workers.checkMembership(p);
      await auditGaplessNow(p);
      log(
        `phase ${p.name}: ${p.recovered ? `recovered ${(((p.recoveredAt as number) - p.injectAt) / 1000).toFixed(1)} s after injection` : `NOT RECOVERED within ${profile.recoverTimeoutMs / 1000} s`} — ${p.notes.join("; ")}`,
      );
      if (!p.recovered) {
        notRun.push(...names.slice(i + 1));
        if (notRun.length > 0) log(`stopping the schedule: ${notRun.length} phases not run (${notRun.join(" ")})`);
        break;
      }
      await sleep(profile.calmMs);
    }
    await sleep(profile.cooldownMs);
    stopping = true;
    log("stopping the load; waiting for requests in flight");
    await Promise.all(load);
    loadEnd = performance.now();
  } finally {
    stopping = true;
    if (ticker) clearInterval(ticker);
    if (loadEnd === 0 && loadStart > 0) loadEnd = performance.now();
    await Promise.all(
      [...clients, ...(probeClient ? [probeClient] : [])].map((c) =>
        withTimeout(c.close({ deleteReplyTopic: false }), 15_000, "client close").catch(() => {}),
      ),
    );
    // SIGTERM first: workers append the grants they hold, so the audit below is complete.
    stuckAtStop = (await pool?.stop()) ?? [];
    if (stuckAtStop.length > 0) log(`${stuckAtStop.join(", ")} did not exit within 20 s of SIGTERM: killed (see their logs)`);
    if (settings && requests.records.length > 0) {
      const auditStore = new Store(settings.mongodbUrl);
      const auditQueries = new MongoQueries(settings.mongodbUrl);
      try {
        audit = await readAudit(auditStore, auditQueries, requests.records);
        const granted = (sequences?.names ?? []).filter((n) => !sequences?.ungranted.has(n));
        log(`idd audit over ${granted.length} sequences`);
        audits = await auditSequences(auditStore, granted);
        if (sequences) {
          gaplessEnd = await auditGapless(auditStore, sequences.gapless, Date.now());
          log(showGaplessAudit(sequences.gapless, gaplessEnd));
        }
      } catch (e) {
        auditError = (e as Error).message;
      } finally {
        await auditStore.close().catch(() => {});
        await auditQueries.close().catch(() => {});
      }
    }
    pool?.close();
    if (onNetwork) {
      netfaults?.heal();
      if (networkStarted) {
        log("stopping the network profile's services this run started");
        await down(networkStarted).catch((e: Error) => log(`stack down failed: ${e.message}`));
      }
      await netfaults?.cleanup();
    } else if (!onCluster) {
      log("stopping the private stack");
      await down({ layout, progress: stackProgress }).catch((e: Error) => log(`stack down failed: ${e.message}`));
    } else if (stopCluster) {
      log("stopping the cluster profile's services this run started");
      await stopCluster().catch((e: Error) => log(`stack down failed: ${e.message}`));
    }
    // The services' data is of no use once they are down (the logs stay), and FerretDB's state.json
    // would otherwise be picked up by `biome check .`, which does not know this folder.
    rmSync(join(stackDir, "data"), { recursive: true, force: true });
    rmSync(lock, { force: true });
    process.off("unhandledRejection", onUnhandled);
    process.off("exit", killWorkers);
  }

  return evaluate({
    profile: profileName,
    seed,
    stackDir,
    workerLogDir,
    requests,
    killPhases,
    reserve: RESERVE,
    unordered: sequences?.unordered ?? new Set(),
    ungranted: sequences?.ungranted ?? new Set(),
    audit,
    auditError,
    audits,
    gapless: gaplessEnd && { audit: gaplessEnd, settlements },
    workers: pool?.workers ?? [],
    unexpectedExits: pool?.unexpectedExits ?? [],
    stuckAtStop,
    zombies: pool?.zombies ?? [],
    unhandled,
    notRun,
    loadMs: loadEnd - loadStart,
    log,
  });
}

/** The workers' reservation settings: small, so reservations turn over many times in a run. */
const RESERVE: ReserveSettings = { lowMs: 15_000, aheadMs: 30_000 };

/** Roughly how long after the sequences are made the network profile's clock runs an hour ahead (its last step). */
function untilClockAhead(p: Profile): number {
  const l = p.links;
  if (!l) return 0;
  const phase = 15_000; // recovery, the membership check, calm
  return (
    p.warmupMs +
    (p.partitionMs ?? 0) +
    20_000 +
    30_000 + // the lone worker's start
    3 * (l.cutMs + phase) +
    2 * (l.latency.ms + phase) +
    (l.clock.offsets.length - 1) * l.clock.ms
  );
}
