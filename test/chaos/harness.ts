/**
 * The fault-injection engine behind `npm run chaos` and test/chaos/chaos.test.ts.
 *
 * A private local stack (its own folder and ports, so faults never disturb other tests), a pool of
 * real `idd worker` processes, sustained load from several IdClients, and a schedule of faults from
 * the failure model in docs/design.md (§5): SIGKILL, SIGSTOP past the session timeout, Redis restarted
 * empty or flushed (then `idd replay`, as an operator would), MongoDB down, the Kafka broker
 * restarted, scale out and in — plus an open-loop burst (`overload`) and a stream of hostile
 * requests (`hostile`) from a plain kafkajs producer (phases/overload.ts, phases/hostile.ts), each with checks of its own.
 * Every reply is kept; at the end the whole history is checked for G1 and G2
 * (test/support/history.ts), and every request must have ended with numbers or a typed error code
 * (G5). After each fault the harness waits until one probe request per sequence
 * succeeds and records how long that took.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import {
  appendFileSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  type WriteStream,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { AssignerProtocol, Kafka, logLevel } from "kafkajs";
import { pino } from "pino";
import { IdClient } from "../../src/client/id-client.js";
import { fromVars, type ServiceSettings } from "../../src/config/services.js";
import { IddError } from "../../src/errors.js";
import type { Range } from "../../src/protocol/reply.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import type { KeyPartitioner } from "../../src/transport/kafka.js";
import { dataDir, layoutFromEnv, pidFile, REPO_ROOT, type ServiceName, type StackLayout } from "../../stack/paths.js";
import { down, up } from "../../stack/stack.js";
import { type CounterAudit, checkGaps, type GapCheck } from "../support/gaps.js";
import { checkHistory, type Issued } from "../support/history.js";
import { librdkafkaDefault } from "../support/partitioners.js";
import { serviceEnv, startWorker, type WorkerProcess } from "../support/workers.js";
import { type HostileSettings, type HostileStats, runHostile } from "./phases/hostile.js";
import { type OverloadSettings, type OverloadStats, runOverload } from "./phases/overload.js";
import type { RawPhaseContext } from "./phases/raw-traffic.js";

// ───────────────────────────── profiles ─────────────────────────────

export type FaultKind =
  | "kill"
  | "pause"
  | "redis-pause"
  | "redis-restart"
  | "redis-flushall"
  | "mongodb-outage"
  | "kafka-restart"
  | "scale"
  | "overload"
  | "hostile";
export const FAULT_KINDS: readonly FaultKind[] = [
  "kill",
  "pause",
  "redis-pause",
  "redis-restart",
  "redis-flushall",
  "mongodb-outage",
  "kafka-restart",
  "scale",
  "overload",
  "hostile",
];
export type ProfileName = "short" | "full";

export interface Profile {
  /** Load before the first fault. */
  warmupMs: number;
  /** Load between a phase's recovery and the next fault. */
  calmMs: number;
  /** Load after the last phase, before the load stops. */
  cooldownMs: number;
  /** How long every sequence may take to answer again after a fault is healed. */
  recoverTimeoutMs: number;
  /** SIGSTOP duration: longer than the session timeout. */
  pauseMs: number;
  mongodbOutageMs: number;
  /** Redis SIGSTOPped (hangs with its data; connections stay open): longer than the session timeout. */
  redisPauseMs: number;
  /** Time between losing Redis's state and running replay: workers must fail closed meanwhile. */
  redisLostMs: number;
  /** The open-loop burst from a raw kafkajs producer (phases/overload.ts, phases/hostile.ts). */
  overload: OverloadSettings;
  /** Hostile requests interleaved with good ones, from a raw kafkajs producer (phases/overload.ts, phases/hostile.ts). */
  hostile: HostileSettings;
  schedule: FaultKind[];
}

const kills = (n: number): FaultKind[] => Array.from({ length: n }, () => "kill");

/** 2,000 hostile requests: the small kinds by the hundred, the large ones (900 KB ids, 300 KB of headers) a few. */
const HOSTILE_MIX: HostileSettings["perKind"] = {
  "reply-topic-invalid": 350,
  "reply-partition-invalid": 350,
  "reply-topic-unknown": 350,
  "correlation-id-huge": 5,
  "headers-huge": 20,
  "bad-json": 350,
  "bad-json-no-reply": 225,
  "zero-count": 350,
};

export const PROFILES: Record<ProfileName, Profile> = {
  // For CI: a few of each, about two minutes of faults (the overload and hostile phases about 10 s each).
  short: {
    warmupMs: 6000,
    calmMs: 1000,
    cooldownMs: 2000,
    recoverTimeoutMs: 45_000,
    pauseMs: 10_000,
    mongodbOutageMs: 8000,
    redisPauseMs: 8000,
    redisLostMs: 2000,
    overload: { requests: 30_000, chunk: 500, inFlight: 4, drainTimeoutMs: 180_000 },
    hostile: { good: 1000, perKind: HOSTILE_MIX, chunk: 200, inFlight: 4, drainTimeoutMs: 120_000, freshRequests: 50, freshMaxMs: 1000 },
    // Redis losses last: without a working `idd replay` nothing recovers from them, and the run stops there.
    schedule: [
      "kill",
      "overload",
      "pause",
      "kill",
      "scale",
      "mongodb-outage",
      "hostile",
      "redis-pause",
      "kafka-restart",
      "kill",
      "redis-restart",
      "redis-flushall",
    ],
  },
  // Issue #4's numbers: ≥ 20 kills, 1 SIGSTOP/SIGCONT, 3 Redis losses, 2 MongoDB outages, 1 broker restart, scale out/in.
  full: {
    warmupMs: 5000,
    calmMs: 3000,
    cooldownMs: 5000,
    recoverTimeoutMs: 60_000,
    pauseMs: 10_000,
    mongodbOutageMs: 8000,
    redisPauseMs: 8000,
    redisLostMs: 3000,
    overload: { requests: 50_000, chunk: 500, inFlight: 4, drainTimeoutMs: 300_000 },
    hostile: {
      good: 2000,
      perKind: Object.fromEntries(Object.entries(HOSTILE_MIX).map(([k, n]) => [k, n * 2])) as HostileSettings["perKind"],
      chunk: 200,
      inFlight: 4,
      drainTimeoutMs: 180_000,
      freshRequests: 50,
      freshMaxMs: 1000,
    },
    schedule: [
      ...kills(4),
      "overload",
      "pause",
      "redis-pause",
      ...kills(4),
      "hostile",
      "mongodb-outage",
      ...kills(3),
      "redis-restart",
      "overload",
      ...kills(3),
      "kafka-restart",
      "hostile",
      ...kills(3),
      "redis-flushall",
      "mongodb-outage",
      ...kills(3),
      "redis-restart",
      "scale",
    ],
  },
};

// ───────────────────────────── options and results ─────────────────────────────

export interface ChaosOptions {
  profile?: ProfileName;
  /** Fault kinds left out of the schedule (e.g. while `idd replay` does not exist yet). */
  skip?: readonly FaultKind[];
  /** Worker processes at the start (default 3). */
  workers?: number;
  /**
   * IdClients generating load (default 4), each with `loops` concurrent request loops (default 20).
   * Each loop asks for one sequence (loops are spread evenly over the sequences), so a partition
   * that is stuck during a fault holds up only its own sequences' loops, not the whole load.
   */
  clients?: number;
  loops?: number;
  sequences?: number;
  /** Client timeout of every request (default 15 s); a request still open 10 s later counts as hung. */
  requestTimeoutMs?: number;
  /** PRNG seed of the load and the victims (default random; printed). */
  seed?: number;
  /** The private stack (defaults: IDD_CHAOS_STACK_DIR or <repo>/.stack-chaos, IDD_CHAOS_PORT_BASE or port base 31000). */
  stackDir?: string;
  portBase?: number;
  /** Multiplies the hostile phase's good and hostile requests. */
  hostileScale?: number;
  /** Progress lines (default: stderr). */
  log?: (line: string) => void;
}

export interface PhaseReport {
  name: string;
  kind: FaultKind | "warmup";
  requests: number;
  ok: number;
  numbers: number;
  /** Failed requests by error code (typed codes, plus HUNG / UNTYPED:<name> / WRONG_COUNT / NO_REPLY, which are failures of the run). */
  errors: Record<string, number>;
  /** Largest number of consecutive numbers skipped, over gaps that end in a number issued in this phase. */
  largestGap: bigint;
  /** Latency of the successful requests sent in this phase (ms). */
  p50Ms: number | null;
  p99Ms: number | null;
  recovered: boolean;
  /** Checks of the phase itself that failed (overload, hostile): each fails the run. */
  failures: string[];
  overload?: OverloadStats;
  hostile?: HostileStats;
  /** From the fault's injection until every sequence answered again. */
  injectToOkMs: number | null;
  /** From the end of the heal step (replacement started, SIGCONT, service up, replay done) until every sequence answered. */
  healToOkMs: number | null;
  notes: string[];
}

export interface CounterReport {
  counter: string;
  numbers: number;
  largestGap: bigint;
  /** The G4 check against MongoDB's grants and reservations (absent when they could not be read, and for ungranted sequences). */
  gaps?: GapCheck;
  /** An obfuscated or snowflake sequence: its values are not serials from granted blocks, so no G4 check. */
  ungranted: boolean;
}

export interface ChaosResult {
  profile: ProfileName;
  seed: number;
  stackDir: string;
  workerLogDir: string;
  phases: PhaseReport[];
  /** Phases of the schedule that did not run because an earlier one did not recover. */
  notRun: string[];
  unrecovered: string[];
  /** Failed checks of phases (`<phase>: <what>`), e.g. an overload request never answered, a hostile one not dead-lettered. */
  phaseFailures: string[];
  requests: number;
  ok: number;
  /** Requests that ended with a typed error code (counted per code in the phases). */
  typedErrors: number;
  numbers: number;
  loadMs: number;
  requestsPerSecond: number;
  duplicates: string[];
  orderViolations: string[];
  /** Skipped numbers that neither a grant, a killed worker's blocks nor replay headroom explains (G4). */
  gapViolations: string[];
  /** Requests that neither got numbers nor a typed code: hung, untyped errors, wrong number count. */
  unaccounted: string[];
  unaccountedCount: number;
  /** Promise rejections nobody handled while the run was going (e.g. from the client library). */
  unhandledRejections: string[];
  /** Workers that exited without being told to. */
  unexpectedExits: string[];
  /** Workers that stayed alive but out of the consumer group (they serve nothing, silently). */
  zombies: string[];
  /** Worker log lines at level error or fatal, per worker (first few). */
  workerErrors: string[];
  counters: CounterReport[];
  checkMs: number;
  /** Why the run failed; empty when it passed. */
  failures: string[];
  passed: boolean;
}

// ───────────────────────────── internals ─────────────────────────────

const HANG_MARGIN_MS = 10_000;
const PROBE_TIMEOUT_MS = 20_000;
const REPLAY_TIMEOUT_MS = 120_000;

interface Rec {
  /** The phase the request was sent in. */
  phase: number;
  /** The phase its reply (or failure) arrived in, when later (a request in flight across a fault). */
  lastPhase?: number;
  sequence: string;
  count: number;
  probe: boolean;
  sentAt: number;
  receivedAt: number;
  period?: string | null;
  ranges?: Range[];
  code?: string;
}

interface PoolWorker {
  id: string;
  wp: WorkerProcess;
  file: WriteStream;
  /** Set before we signal it, so its exit is not reported as a crash. */
  expectExit: boolean;
  paused: boolean;
  exit?: string;
}

interface PhaseState {
  name: string;
  kind: FaultKind | "warmup";
  injectAt: number;
  healedAt?: number;
  recoveredAt?: number;
  recovered: boolean;
  notes: string[];
  failures: string[];
  overload?: OverloadStats;
  hostile?: HostileStats;
}

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

const rangeSize = (r: Range) => r.last - r.first + 1n;

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The consumer group as the broker sees it: worker id → partitions of the request topic. */
interface GroupView {
  state: string;
  members: Map<string, number[]>;
}

const showGroup = (v: GroupView | undefined) =>
  v ? `${v.state}: ${[...v.members].map(([id, ps]) => `${id}[${ps.join(",")}]`).join(" ") || "no members"}` : "group unreadable";

/** The last kafkajs consumer crash ("Crash: …") in a worker's log, if any: a hint why it left the group. */
function crashOf(w: PoolWorker): string | undefined {
  const line = w.wp.log.findLast((l) => l.includes('"msg":"Crash'));
  if (line === undefined) return undefined;
  try {
    return (JSON.parse(line) as { msg: string }).msg.slice(0, 200);
  } catch {
    return line.slice(0, 200);
  }
}

const WORKER_PIDS = "worker-pids";

/**
 * Kills the workers an earlier run recorded and never stopped (it was killed outright). A pid
 * counts only while it is still an `idd worker` of that run's consumer group (checked in /proc),
 * so a recycled pid is never signalled.
 */
function stopLeftoverWorkers(stackDir: string): number[] {
  const file = join(stackDir, WORKER_PIDS);
  if (!existsSync(file)) return [];
  const killed: number[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const [pidText, group] = line.trim().split(" ");
    const pid = Number(pidText);
    if (!Number.isInteger(pid) || pid <= 0 || !group) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
      if (!cmdline.some((a) => a.endsWith("src/cli/main.ts")) || !cmdline.includes("worker")) continue;
      if (!environ.includes(`IDD_GROUP_ID=${group}`)) continue;
      process.kill(pid, "SIGKILL");
      killed.push(pid);
    } catch {
      // gone already, or not ours to read
    }
  }
  rmSync(file, { force: true });
  return killed;
}

/** One chaos run per stack folder: a second one would stop the first one's services. */
function takeLock(stackDir: string): string {
  mkdirSync(stackDir, { recursive: true });
  const file = join(stackDir, "chaos.lock");
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: "wx" });
      return file;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) throw e;
      const pid = Number(readFileSync(file, "utf8").trim());
      let running = false;
      try {
        process.kill(pid, 0);
        running = pid !== process.pid;
      } catch {
        running = false;
      }
      if (running) throw new Error(`another chaos run (pid ${pid}) is using ${stackDir}; wait for it or stop it`);
      rmSync(file, { force: true }); // left by a run that is gone
    }
  }
}

const alive = (w: PoolWorker) => w.wp.proc.exitCode === null && w.wp.proc.signalCode === null && !w.expectExit;

// ───────────────────────────── the run ─────────────────────────────

/** The private stack's layout: its own folder and ports, never the shared stack's. */
export function chaosLayout(opts: Pick<ChaosOptions, "stackDir" | "portBase"> = {}): StackLayout {
  return layoutFromEnv({
    ...process.env,
    IDD_STACK_DIR: opts.stackDir ?? process.env.IDD_CHAOS_STACK_DIR ?? join(REPO_ROOT, ".stack-chaos"),
    IDD_STACK_PORT_BASE: String(opts.portBase ?? process.env.IDD_CHAOS_PORT_BASE ?? 31000),
  });
}

export async function runChaos(opts: ChaosOptions = {}): Promise<ChaosResult> {
  const profileName = opts.profile ?? "short";
  const scale = opts.hostileScale ?? 1;
  const base = PROFILES[profileName];
  const profile: Profile = {
    ...base,
    hostile: {
      ...base.hostile,
      good: base.hostile.good * scale,
      perKind: Object.fromEntries(Object.entries(base.hostile.perKind).map(([k, n]) => [k, n * scale])) as HostileSettings["perKind"],
    },
  };
  const skip = new Set(opts.skip ?? []);
  const schedule = profile.schedule.filter((k) => !skip.has(k));
  const seed = opts.seed ?? Math.floor(Math.random() * 2 ** 31);
  const random = mulberry32(seed);
  const requestTimeoutMs = opts.requestTimeoutMs ?? 15_000;
  const t0 = Date.now();
  const say = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const log = (line: string) => say(`chaos [${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${line}`);

  const layout = chaosLayout(opts);
  const stackDir = layout.dir;
  const workerLogDir = join(stackDir, "workers");
  const stackProgress = (line: string) => log(`stack: ${line}`);

  const run = randomUUID().slice(0, 8);
  const records: Rec[] = [];
  const phases: PhaseState[] = [];
  const workers: PoolWorker[] = [];
  const clients: IdClient[] = [];
  const unexpectedExits: string[] = [];
  const zombies: string[] = [];
  /** Phases in which a worker was SIGKILLed (its unlogged blocks may show as gaps, G4). */
  const killPhases = new Set<number>();
  /** MongoDB's audit per counter (`sequence|period`), read after the workers flushed and stopped. */
  let audit: Map<string, CounterAudit> | undefined;
  let auditError: string | undefined;
  const unhandled: string[] = [];
  const untypedSamples = new Map<string, string>();
  let workerSeq = 0;
  let stopping = false;
  let loadStart = 0;
  let loadEnd = 0;
  let probeClient: IdClient | undefined;
  let ticker: NodeJS.Timeout | undefined;

  const onUnhandled = (reason: unknown) => {
    const text = reason instanceof IddError ? `${reason.code}: ${reason.message}` : String((reason as Error)?.message ?? reason);
    unhandled.push(text);
    if (unhandled.length <= 3) log(`unhandled promise rejection (not from the harness): ${text}`);
  };
  process.on("unhandledRejection", onUnhandled);
  // Should this process exit mid-run (Ctrl-C, process.exit), take the workers along.
  const killWorkers = () => {
    for (const w of workers) if (w.wp.proc.exitCode === null && w.wp.proc.signalCode === null) w.wp.proc.kill("SIGKILL");
  };
  process.on("exit", killWorkers);

  let settings: ServiceSettings | undefined;
  let workerEnv: NodeJS.ProcessEnv = {};
  const sequenceNames: string[] = [];
  /** Sequences whose numbers are unique but not ordered (obfuscated): checked for G1 only. */
  /** Sequences checked for uniqueness only (no G2), and those without blocks to check gaps against (no G4). */
  const unordered = new Set<string>();
  const ungranted = new Set<string>();
  /** Reply topics of the raw phases (overload, hostile), and one that never exists. */
  const rawTopics = { overload: `chaos.${run}.overload-replies`, hostile: `chaos.${run}.hostile-replies`, missing: `chaos.${run}.nowhere` };

  const startPoolWorker = (): PoolWorker => {
    const id = `w${++workerSeq}`;
    const wp = startWorker(id, workerEnv);
    // Recorded so that a run killed outright (its finally never ran) has its workers stopped by the next one.
    if (wp.proc.pid !== undefined) appendFileSync(join(stackDir, WORKER_PIDS), `${wp.proc.pid} ${workerEnv.IDD_GROUP_ID}\n`);
    const file = createWriteStream(join(workerLogDir, `${id}.log`));
    wp.proc.stderr?.on("data", (d: Buffer) => file.write(d));
    const w: PoolWorker = { id, wp, file, expectExit: false, paused: false };
    wp.proc.once("exit", (code, signal) => {
      w.exit = signal ?? `exit ${code}`;
      if (!w.expectExit) {
        const line = `${id} exited on its own (${w.exit}) during ${phases.at(-1)?.name ?? "start-up"}; log ${join(workerLogDir, `${id}.log`)}`;
        unexpectedExits.push(line);
        log(`WORKER EXITED: ${line}`);
      }
    });
    workers.push(w);
    return w;
  };

  let observer: Kafka | undefined;
  const groupView = async (): Promise<GroupView | undefined> => {
    if (!settings) return undefined;
    observer ??= new Kafka({
      clientId: "idd-chaos-observer",
      brokers: settings.kafkaBrokers,
      logLevel: logLevel.NOTHING,
      connectionTimeout: 2000,
      retry: { retries: 1 },
    });
    const admin = observer.admin();
    try {
      await withTimeout(admin.connect(), 5000, "observer connect");
      const { groups } = await withTimeout(admin.describeGroups([workerEnv.IDD_GROUP_ID as string]), 5000, "describeGroups");
      const g = groups[0];
      if (!g) return undefined;
      const members = new Map<string, number[]>();
      for (const m of g.members) {
        const a = m.memberAssignment.length > 0 ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null;
        const ps = [...(a?.assignment[workerEnv.IDD_REQUEST_TOPIC as string] ?? [])].sort((x, y) => x - y);
        members.set(m.clientId.replace(/^idd-/, ""), ps);
      }
      return { state: g.state, members };
    } catch {
      return undefined;
    } finally {
      await admin.disconnect().catch(() => {});
    }
  };

  /** A live worker, preferring one that owns partitions right now (so the fault hits something). */
  const pickVictim = async (): Promise<{ w: PoolWorker; partitions: string } | undefined> => {
    const view = await groupView();
    const candidates = workers.filter((w) => alive(w) && !w.paused);
    const owning = candidates.filter((w) => (view?.members.get(w.id)?.length ?? 0) > 0);
    const from = owning.length > 0 ? owning : candidates;
    const w = from[Math.floor(random() * from.length)];
    if (!w) return undefined;
    const ps = view?.members.get(w.id);
    return { w, partitions: ps ? `[${ps.join(",")}]` : "not in the group" };
  };

  const describe = (v: { w: PoolWorker; partitions: string }) => `${v.w.id} (pid ${v.w.wp.proc.pid}, partitions ${v.partitions})`;

  /**
   * After a phase: every live worker must be back in the consumer group. One that stays out serves
   * nothing while looking healthy; it is reported and replaced, so the run goes on at full strength.
   */
  const checkMembership = async (p: PhaseState): Promise<void> => {
    const deadline = Date.now() + 15_000; // a worker started just now needs about 5 s to join
    let view: GroupView | undefined;
    let missing: PoolWorker[] = [];
    for (;;) {
      view = await groupView();
      const members = view?.members;
      const live = workers.filter((w) => alive(w) && !w.paused);
      missing = members ? live.filter((w) => !members.has(w.id)) : [];
      if (view && view.state === "Stable" && missing.length === 0) break;
      if (Date.now() >= deadline) break;
      await sleep(500);
    }
    p.notes.push(`group ${showGroup(view)}`);
    for (const w of missing) {
      const crash = crashOf(w);
      const line = `${w.id} alive but not in the consumer group after ${p.name}${crash ? ` — its log: ${crash}` : ""}`;
      zombies.push(line);
      log(`  ZOMBIE: ${line}`);
      w.expectExit = true;
      killPhases.add(current());
      w.wp.proc.kill("SIGKILL");
      await w.wp.exited;
      const n = startPoolWorker();
      p.notes.push(`ZOMBIE ${w.id}${crash ? ` (${crash})` : ""}: killed, replaced by ${n.id}`);
    }
  };

  const current = () => phases.length - 1;

  /** Per sequence, how the load's and the probes' requests of the last `s` seconds ended (why a phase did not recover). */
  const lastSeconds = (s: number): string => {
    const since = performance.now() - s * 1000;
    const recent = records.filter((r) => r.receivedAt >= since);
    const rows = sequenceNames.map((name) => {
      const load = recent.filter((r) => r.sequence === name && !r.probe);
      const probes = recent.filter((r) => r.sequence === name && r.probe);
      const codes = [...new Set(probes.flatMap((r) => (r.code ? [r.code] : [])))];
      return (
        `${name.slice(name.lastIndexOf("-") + 1)} load ${load.filter((r) => r.code === undefined).length}/${load.length} ok, ` +
        `probes ${probes.filter((r) => r.code === undefined).length}/${probes.length} ok${codes.length > 0 ? ` (${codes.join(" ")})` : ""}`
      );
    });
    return `in the last ${s} s: ${rows.join("; ")} (probes failing while the load of the same sequence is answered point at the probe client: see clients.log)`;
  };

  /** One request, recorded with the phase that was active when it was sent. */
  const request = async (client: IdClient, sequence: string, count: number, probe: boolean, timeoutMs: number): Promise<Rec> => {
    const rec: Rec = { phase: current(), sequence, count, probe, sentAt: performance.now(), receivedAt: 0 };
    let guard: NodeJS.Timeout | undefined;
    const hung = new Promise<"HUNG">((resolve) => {
      guard = setTimeout(() => resolve("HUNG"), timeoutMs + HANG_MARGIN_MS);
    });
    try {
      const r = await Promise.race([client.next(sequence, count, { timeoutMs }), hung]);
      rec.receivedAt = performance.now();
      if (r === "HUNG") rec.code = "HUNG";
      else {
        rec.period = r.period;
        rec.ranges = r.ranges;
        const got = r.ranges.reduce((s, x) => s + rangeSize(x), 0n);
        if (got !== BigInt(count)) rec.code = "WRONG_COUNT";
      }
    } catch (e) {
      rec.receivedAt = performance.now();
      if (e instanceof IddError) rec.code = e.code;
      else {
        const name = (e as Error)?.name ?? typeof e;
        rec.code = `UNTYPED:${name}`;
        if (!untypedSamples.has(name)) untypedSamples.set(name, String((e as Error)?.message ?? e).slice(0, 300));
      }
    } finally {
      clearTimeout(guard);
    }
    if (current() !== rec.phase) rec.lastPhase = current();
    records.push(rec);
    return rec;
  };

  const loadLoop = async (client: IdClient, sequence: string): Promise<void> => {
    while (!stopping) {
      const count = random() < 0.85 ? 1 : 2 + Math.floor(random() * 49);
      const r = await request(client, sequence, count, false, requestTimeoutMs);
      if (r.code !== undefined) await sleep(100); // error replies come fast: do not spin on them
    }
  };

  /** Waits until every sequence has answered one probe with numbers. */
  const probeAll = async (timeoutMs: number): Promise<boolean> => {
    const deadline = Date.now() + timeoutMs;
    const client = probeClient as IdClient;
    const okAll = await Promise.all(
      sequenceNames.map(async (s) => {
        while (Date.now() < deadline) {
          const left = deadline - Date.now();
          const r = await request(client, s, 1, true, Math.max(1000, Math.min(PROBE_TIMEOUT_MS, left)));
          if (r.code === undefined) return true;
          await sleep(250);
        }
        return false;
      }),
    );
    return okAll.every(Boolean);
  };

  const replay = async (n: number): Promise<{ ok: boolean; note: string }> => {
    const file = join(stackDir, `replay-${n}.log`);
    const out = createWriteStream(file);
    const child = spawn(process.execPath, ["--import", "tsx", join(REPO_ROOT, "src/cli/main.ts"), "replay"], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...workerEnv, IDD_WORKER_ID: "chaos-replay", LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let tail = "";
    const keep = (d: Buffer) => {
      out.write(d);
      tail = (tail + d.toString()).slice(-2000);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    const timer = setTimeout(() => child.kill("SIGKILL"), REPLAY_TIMEOUT_MS);
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      child.once("exit", (c, s) => resolve([c, s])),
    );
    clearTimeout(timer);
    out.end();
    const last =
      tail
        .trim()
        .split("\n")
        .filter((l) => l.trim())
        .at(-1) ?? "";
    if (code === 0) return { ok: true, note: `idd replay exited 0 (${file})` };
    return { ok: false, note: `idd replay failed (${signal ?? `exit ${code}`}): ${last.slice(0, 200)} (${file})` };
  };

  const redisClient = () => new Redis((settings as ServiceSettings).redisUrl, { maxRetriesPerRequest: 1, lazyConnect: false });

  const service = async (s: ServiceName, what: "up" | "down", notes: string[]) => {
    const t = Date.now();
    if (what === "down") await down({ layout, services: [s], progress: stackProgress });
    else await up({ layout, services: [s], progress: stackProgress });
    notes.push(`${s} ${what} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  };

  /** What Redis holds (a lost Redis should hold nothing that workers wrote before replay). */
  const redisKeys = async (): Promise<string> => {
    const r = redisClient();
    try {
      const all = (await r.keys("*")).sort();
      // Owner tokens are taken again at once by workers (expected): counted, not listed.
      const owners = all.filter((k) => k.startsWith("idd:owner:")).length;
      const keys = all.filter((k) => !k.startsWith("idd:owner:"));
      const shown = await Promise.all(
        keys.slice(0, 12).map(async (k) => {
          const type = await r.type(k);
          if (type === "hash") return `${k} ${JSON.stringify(await r.hgetall(k))}`;
          if (type === "string") return `${k}=${await r.get(k)}`;
          return `${k} (${type})`;
        }),
      );
      return `${owners} owner tokens, ${keys.length} other keys${shown.length > 0 ? ` [${shown.join(", ")}${keys.length > shown.length ? ", …" : ""}]` : ""}`;
    } catch (e) {
      return `unreadable (${(e as Error).message})`;
    } finally {
      r.disconnect();
    }
  };

  let replays = 0;
  const redisLost = async (how: "restart" | "flushall", p: PhaseState) => {
    if (how === "restart") {
      await service("redis", "down", p.notes);
      // The stack runs Redis with --save "" --appendonly no; a dump file would bring old state back.
      const dump = join(dataDir(layout, "redis"), "dump.rdb");
      if (existsSync(dump)) {
        rmSync(dump);
        p.notes.push("deleted a dump.rdb");
      }
      await service("redis", "up", p.notes);
    } else {
      const r = redisClient();
      try {
        await r.flushall();
      } finally {
        r.disconnect();
      }
      p.notes.push("FLUSHALL");
    }
    p.notes.push(`Redis right after: ${await redisKeys()}`);
    await sleep(profile.redisLostMs); // workers must fail closed now: REDIS_STATE_* error replies
    p.notes.push(`Redis before replay: ${await redisKeys()}`);
  };

  const runReplay = async (p: PhaseState): Promise<boolean> => {
    const r = await replay(++replays);
    p.notes.push(r.note);
    log(`  ${r.note}`);
    return r.ok;
  };

  /** What the raw phases (phases/overload.ts, phases/hostile.ts) need: topics, the history, worker logs, a client for fresh requests. */
  const rawContext = (replyTopic: string, replyPartitions: number): RawPhaseContext => ({
    brokers: (settings as ServiceSettings).kafkaBrokers,
    requestTopic: workerEnv.IDD_REQUEST_TOPIC as string,
    requestPartitions: Number(workerEnv.IDD_REQUEST_PARTITIONS),
    dlqTopic: workerEnv.IDD_DLQ_TOPIC as string,
    replyTopic,
    replyPartitions,
    missingTopic: rawTopics.missing,
    sequences: sequenceNames,
    random,
    log,
    record: (r) => {
      records.push({ phase: current(), probe: false, ...r });
    },
    crashMark: () => {
      const from = new Map(workers.map((w) => [w, w.wp.log.length]));
      return () =>
        workers.reduce(
          (n, w) => n + w.wp.log.slice(from.get(w) ?? 0).filter((l) => l.includes('"msg":"Kafka consumer crashed"')).length,
          0,
        );
    },
    fresh: async (n, timeoutMs) => {
      // In waves of one request per sequence, through the probe client: how fast a new request is answered now.
      const latencies: number[] = [];
      const failures: string[] = [];
      for (let sent = 0; sent < n; ) {
        const wave = sequenceNames.slice(0, Math.min(sequenceNames.length, n - sent));
        sent += wave.length;
        for (const r of await Promise.all(wave.map((s) => request(probeClient as IdClient, s, 1, true, timeoutMs)))) {
          if (r.code === undefined) latencies.push(r.receivedAt - r.sentAt);
          else failures.push(`${r.sequence}: ${r.code}`);
        }
      }
      return { latencies, failures };
    },
  });

  /** Runs a raw phase; its failed checks, and a step that could not run at all, fail the phase. */
  const rawPhase = async <S>(
    p: PhaseState,
    step: () => Promise<{ stats: S; notes: string[]; failures: string[] }>,
  ): Promise<S | undefined> => {
    const exitsBefore = unexpectedExits.length;
    try {
      const r = await step();
      p.notes.push(...r.notes);
      p.failures.push(...r.failures);
      const exits = unexpectedExits.length - exitsBefore;
      if (exits > 0) p.failures.push(`${exits} workers exited on their own during the phase`);
      for (const f of p.failures) log(`  CHECK FAILED: ${f}`);
      return r.stats;
    } catch (e) {
      p.failures.push(`${p.kind} step failed: ${(e as Error).message}`);
      log(`  CHECK FAILED: ${p.kind} step failed: ${(e as Error).message}`);
      return undefined;
    } finally {
      p.healedAt = Date.now();
    }
  };

  /** inject → optional heal; returns once the fault has been healed. */
  const faults: Record<FaultKind, (p: PhaseState) => Promise<void>> = {
    async kill(p) {
      const pick = await pickVictim();
      if (!pick) throw new Error("no live worker to kill");
      const v = pick.w;
      p.notes.push(`SIGKILL ${describe(pick)}`);
      v.expectExit = true;
      killPhases.add(current());
      v.wp.proc.kill("SIGKILL");
      await v.wp.exited;
      p.healedAt = Date.now();
      const n = startPoolWorker();
      p.notes.push(`replacement ${n.id}`);
    },
    async pause(p) {
      const pick = await pickVictim();
      if (!pick) throw new Error("no live worker to pause");
      const v = pick.w;
      p.notes.push(`SIGSTOP ${describe(pick)} for ${profile.pauseMs} ms`);
      v.paused = true;
      v.wp.proc.kill("SIGSTOP");
      await sleep(profile.pauseMs);
      v.wp.proc.kill("SIGCONT");
      v.paused = false;
      p.healedAt = Date.now();
      p.notes.push(`SIGCONT ${v.id}`);
    },
    async "redis-pause"(p) {
      const pid = Number(readFileSync(pidFile(layout, "redis"), "utf8").trim());
      p.notes.push(`SIGSTOP redis-server (pid ${pid}) for ${profile.redisPauseMs} ms`);
      process.kill(pid, "SIGSTOP");
      try {
        await sleep(profile.redisPauseMs);
      } finally {
        process.kill(pid, "SIGCONT");
      }
      p.healedAt = Date.now();
      p.notes.push("SIGCONT redis-server");
    },
    async "redis-restart"(p) {
      await redisLost("restart", p);
      if (!(await runReplay(p))) p.notes.push("NOT HEALED: replay failed");
      p.healedAt = Date.now();
    },
    async "redis-flushall"(p) {
      await redisLost("flushall", p);
      if (!(await runReplay(p))) p.notes.push("NOT HEALED: replay failed");
      p.healedAt = Date.now();
    },
    async "mongodb-outage"(p) {
      await service("mongodb", "down", p.notes);
      await sleep(profile.mongodbOutageMs);
      await service("mongodb", "up", p.notes);
      p.healedAt = Date.now();
    },
    async "kafka-restart"(p) {
      await service("kafka", "down", p.notes);
      await service("kafka", "up", p.notes);
      p.healedAt = Date.now();
    },
    async scale(p) {
      const added = [startPoolWorker(), startPoolWorker()];
      p.notes.push(`started ${added.map((w) => w.id).join(", ")}`);
      await withTimeout(Promise.all(added.map((w) => w.wp.assigned)), 60_000, "the new workers' first assignment").catch((e: Error) =>
        p.notes.push(e.message),
      );
      await sleep(profile.calmMs + 2000);
      const leaving = workers.filter((w) => alive(w) && !w.paused && !added.includes(w)).slice(0, 2);
      for (const w of leaving) w.expectExit = true;
      p.notes.push(`group before scale-in ${showGroup(await groupView())}; SIGTERM ${leaving.map((w) => w.id).join(", ")}`);
      for (const w of leaving) w.wp.proc.kill("SIGTERM");
      const codes = await Promise.all(
        leaving.map((w) => withTimeout(w.wp.exited, 30_000, `${w.id} leaving on SIGTERM`).catch((e: Error) => e.message)),
      );
      for (const [i, w] of leaving.entries()) {
        const c = codes[i];
        if (c !== 0) {
          p.notes.push(`${w.id} did not exit 0 on SIGTERM: ${c}`);
          unexpectedExits.push(`${w.id} did not exit 0 on SIGTERM (${c}) during ${p.name}`);
        }
      }
      p.healedAt = Date.now();
    },
    async overload(p) {
      const s = await rawPhase(p, () => runOverload(rawContext(rawTopics.overload, 6), profile.overload));
      if (s) p.overload = s;
    },
    async hostile(p) {
      const s = await rawPhase(p, () => runHostile(rawContext(rawTopics.hostile, 3), profile.hostile));
      if (s) p.hostile = s;
    },
  };

  const notRun: string[] = [];
  let store: Store | undefined;
  const lock = takeLock(stackDir); // before anything is stopped: the stack may belong to a run in progress
  try {
    // ── the private stack, from a clean slate ──
    log(`profile ${profileName}, seed ${seed}, schedule: ${schedule.join(" ")}`);
    log(
      `private stack in ${stackDir}, ports ${layout.ports.redis} (redis) ${layout.ports.kafka} (kafka) ${layout.ports.mongodb} (mongodb) ${layout.ports.registry} (registry)`,
    );
    await down({ layout, progress: stackProgress }); // leftovers of an interrupted run
    const leftovers = stopLeftoverWorkers(stackDir);
    if (leftovers.length > 0) log(`stopped ${leftovers.length} worker processes left by an interrupted run (pids ${leftovers.join(", ")})`);
    for (const entry of readdirSync(stackDir))
      if (join(stackDir, entry) !== lock) rmSync(join(stackDir, entry), { recursive: true, force: true });
    mkdirSync(workerLogDir, { recursive: true });
    const tUp = Date.now();
    const stack = await up({ layout, progress: stackProgress });
    settings = fromVars(stack.env, stackDir);
    log(`stack up in ${((Date.now() - tUp) / 1000).toFixed(1)} s`);
    {
      const r = redisClient();
      try {
        const save = (await r.config("GET", "save")) as string[];
        const aof = (await r.config("GET", "appendonly")) as string[];
        log(`redis persistence: save "${save[1]}", appendonly ${aof[1]} (must be "" and no: a restart comes back empty)`);
      } finally {
        r.disconnect();
      }
    }

    workerEnv = {
      ...serviceEnv(settings),
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
      IDD_RESERVE_LOW_MS: "15000",
      IDD_RESERVE_AHEAD_MS: "30000",
    };

    // ── sequences, before the workers ──
    store = new Store(settings.mongodbUrl);
    const zones = ["Asia/Shanghai", "America/New_York", "Pacific/Kiritimati", "Pacific/Pago_Pago"];
    const nSeq = opts.sequences ?? 10;
    let daily = 0;
    for (let i = 0; i < nSeq; i++) {
      const isDaily = i % 5 >= 3; // 6 monotonic, 4 daily out of 10
      if (isDaily) daily++;
      const name = `chaos-${run}-${isDaily ? "d" : "m"}${i}`;
      await store.createSequence(
        defineSequence(
          {
            name,
            kind: isDaily ? "daily" : "monotonic",
            start: i % 2 ? 1_000_000 : 1,
            ...(isDaily && { timeZone: zones[i % zones.length] }),
          },
          new Date(),
        ),
      );
      sequenceNames.push(name);
    }
    // An obfuscated and a snowflake sequence: both checked for uniqueness (G1); the snowflake ids
    // also for causal order (G2: a partition's next owner issues above the last id answered).
    // Obfuscated values are unordered by design; neither has gaps to explain against the grants.
    const obfuscated = `chaos-${run}-o${nSeq}`;
    const snowflake = `chaos-${run}-s${nSeq + 1}`;
    await store.createSequence(defineSequence({ name: obfuscated, kind: "obfuscated", digits: 12 }, new Date()));
    await store.createSequence(defineSequence({ name: snowflake, kind: "snowflake" }, new Date()));
    sequenceNames.push(obfuscated, snowflake);
    unordered.add(obfuscated);
    ungranted.add(obfuscated);
    ungranted.add(snowflake);
    await store.close();
    store = undefined;
    log(`${sequenceNames.length} sequences created (${daily} daily, 1 obfuscated, 1 snowflake): ${sequenceNames.join(" ")}`);

    // ── reply topics of the raw phases, before the workers: a worker's metadata snapshot must know them ──
    {
      const admin = new Kafka({ clientId: "idd-chaos-setup", brokers: settings.kafkaBrokers, logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      try {
        await admin.createTopics({
          topics: [
            { topic: rawTopics.overload, numPartitions: 6 },
            { topic: rawTopics.hostile, numPartitions: 3 },
          ],
          waitForLeaders: true,
        });
      } finally {
        await admin.disconnect();
      }
    }

    // ── workers ──
    const nWorkers = opts.workers ?? 3;
    for (let i = 0; i < nWorkers; i++) startPoolWorker();
    await withTimeout(Promise.all(workers.map((w) => w.wp.assigned)), 90_000, "the workers' first assignment");
    log(`${nWorkers} workers assigned: ${showGroup(await groupView())}`);

    // ── clients and load ──
    const nClients = opts.clients ?? 4;
    const loops = opts.loops ?? 20;
    // The clients' kafkajs warnings and errors go to clients.log: a client that stops hearing replies
    // (e.g. its reply consumer not back after a broker restart) leaves its reasons there.
    const clientLog = pino({ level: "warn", base: {} }, pino.destination({ dest: join(stackDir, "clients.log"), sync: true }));
    const connect = (name: string, partitioner?: KeyPartitioner) =>
      IdClient.connect({
        brokers: (settings as ServiceSettings).kafkaBrokers,
        requestTopic: workerEnv.IDD_REQUEST_TOPIC,
        logger: clientLog.child({ client: name }),
        ...(partitioner && { partitioner }),
      });
    // Every other client partitions like librdkafka's default (CRC-32), as Python or Go services
    // would: their requests reach workers that do not issue the sequence and are forwarded home,
    // under every fault, and the two kinds of client share sequences (README: Wire contract → Routing).
    for (let i = 0; i < nClients; i++) clients.push(await connect(`c${i + 1}`, i % 2 === 1 ? librdkafkaDefault : undefined));
    probeClient = await connect("probe");
    phases.push({ name: "warmup", kind: "warmup", injectAt: Date.now(), recovered: true, notes: [], failures: [] });
    loadStart = performance.now();
    const load = clients.flatMap((c, ci) =>
      Array.from({ length: loops }, (_, i) => loadLoop(c, sequenceNames[(ci * loops + i) % sequenceNames.length] as string)),
    );
    log(
      `load: ${nClients} clients × ${loops} loops (${Math.floor(nClients / 2)} on librdkafka's default partitioner), request timeout ${requestTimeoutMs} ms`,
    );

    let lastCount = 0;
    let lastAt = performance.now();
    ticker = setInterval(() => {
      const now = performance.now();
      const recent = records.slice(lastCount);
      const errs = recent.filter((r) => r.code !== undefined).length;
      log(
        `  … ${((recent.length * 1000) / (now - lastAt)).toFixed(0)} req/s, ${errs} errors in the last ${((now - lastAt) / 1000).toFixed(0)} s; workers alive: ${workers
          .filter(alive)
          .map((w) => w.id + (w.paused ? "(stopped)" : ""))
          .join(" ")}`,
      );
      lastCount = records.length;
      lastAt = now;
    }, 10_000);
    ticker.unref();

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
      phases.push(p);
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
      else p.notes.push(lastSeconds(10));
      if (p.recovered) await checkMembership(p);
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
    const live = workers.filter((w) => w.wp.proc.exitCode === null && w.wp.proc.signalCode === null);
    for (const w of live) {
      w.expectExit = true;
      w.wp.proc.kill("SIGTERM");
    }
    await Promise.all(live.map((w) => withTimeout(w.wp.exited, 20_000, "worker exit").catch(() => {})));
    for (const w of workers) {
      w.expectExit = true;
      if (w.wp.proc.exitCode === null && w.wp.proc.signalCode === null) w.wp.proc.kill("SIGKILL");
    }
    await Promise.all(workers.map((w) => withTimeout(w.wp.exited, 10_000, "worker exit").catch(() => {})));
    if (settings && records.length > 0) {
      const auditStore = new Store(settings.mongodbUrl);
      try {
        audit = await readAudit(auditStore, records);
      } catch (e) {
        auditError = (e as Error).message;
      } finally {
        await auditStore.close().catch(() => {});
      }
    }
    for (const w of workers) w.file.end();
    rmSync(join(stackDir, WORKER_PIDS), { force: true });
    await store?.close().catch(() => {});
    log("stopping the private stack");
    await down({ layout, progress: stackProgress }).catch((e: Error) => log(`stack down failed: ${e.message}`));
    // The services' data is of no use once they are down (the logs stay), and FerretDB's state.json
    // would otherwise be picked up by `biome check .`, which does not know this folder.
    rmSync(join(stackDir, "data"), { recursive: true, force: true });
    rmSync(lock, { force: true });
    process.off("unhandledRejection", onUnhandled);
    process.off("exit", killWorkers);
  }

  return evaluate();

  // ───────────────────────────── evaluation ─────────────────────────────

  function evaluate(): ChaosResult {
    log(`checking ${records.length} requests`);
    const tCheck = performance.now();
    const issued: Issued[] = [];
    for (const r of records) {
      if (r.ranges && r.code !== "WRONG_COUNT")
        issued.push({ sequence: r.sequence, period: r.period ?? null, ranges: r.ranges, sentAt: r.sentAt, receivedAt: r.receivedAt });
    }
    const report = checkHistory(issued, unordered);
    const checkMs = performance.now() - tCheck;

    // Gaps over the sorted union of everything issued per (sequence, period); each gap belongs to
    // the phase of the number that ends it.
    const byCounter = new Map<string, { first: bigint; last: bigint; phase: number; lastPhase?: number }[]>();
    for (const r of records) {
      if (!r.ranges) continue;
      const key = `${r.sequence}|${r.period ?? ""}`;
      let list = byCounter.get(key);
      if (!list) {
        list = [];
        byCounter.set(key, list);
      }
      for (const x of r.ranges)
        list.push({ first: x.first, last: x.last, phase: r.phase, ...(r.lastPhase !== undefined && { lastPhase: r.lastPhase }) });
    }
    const phaseGap = new Map<number, bigint>();
    const counters: CounterReport[] = [];
    const gapViolations: string[] = [];
    for (const [counter, list] of [...byCounter].sort(([a], [b]) => (a < b ? -1 : 1))) {
      list.sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
      let largest = 0n;
      let numbers = 0n;
      let prevLast: bigint | undefined;
      for (const x of list) {
        numbers += x.last - x.first + 1n;
        if (prevLast !== undefined && x.first > prevLast + 1n) {
          const gap = x.first - prevLast - 1n;
          if (gap > largest) largest = gap;
          if (gap > (phaseGap.get(x.phase) ?? 0n)) phaseGap.set(x.phase, gap);
        }
        if (prevLast === undefined || x.last > prevLast) prevLast = x.last;
      }
      const isUngranted = ungranted.has(counter.slice(0, counter.indexOf("|")));
      const a = isUngranted ? undefined : audit?.get(counter);
      const g = a
        ? checkGaps(counter, list, a, {
            names: phases.map((p) => p.name),
            kills: killPhases,
            redisLosses: new Set(phases.flatMap((p, i) => (p.kind === "redis-restart" || p.kind === "redis-flushall" ? [i] : []))),
          })
        : undefined;
      if (g) gapViolations.push(...g.violations);
      counters.push({ counter, numbers: Number(numbers), largestGap: largest, gaps: g, ungranted: isUngranted });
    }

    const unaccounted: string[] = [];
    let unaccountedCount = 0;
    const phaseReports: PhaseReport[] = phases.map((p) => ({
      name: p.name,
      kind: p.kind,
      requests: 0,
      ok: 0,
      numbers: 0,
      errors: {},
      largestGap: 0n,
      p50Ms: null,
      p99Ms: null,
      recovered: p.recovered,
      failures: p.failures,
      ...(p.overload && { overload: p.overload }),
      ...(p.hostile && { hostile: p.hostile }),
      injectToOkMs: p.recoveredAt !== undefined ? p.recoveredAt - p.injectAt : null,
      healToOkMs: p.recoveredAt !== undefined ? p.recoveredAt - (p.healedAt ?? p.injectAt) : null,
      notes: p.notes,
    }));
    let ok = 0;
    let typedErrors = 0;
    const latencies = phaseReports.map((): number[] => []);
    for (const r of records) {
      const pr = phaseReports[r.phase] as PhaseReport;
      pr.requests++;
      if (r.code === undefined) {
        ok++;
        pr.ok++;
        pr.numbers += r.count;
        latencies[r.phase]?.push(r.receivedAt - r.sentAt);
        continue;
      }
      pr.errors[r.code] = (pr.errors[r.code] ?? 0) + 1;
      if (r.code === "HUNG" || r.code === "WRONG_COUNT" || r.code === "NO_REPLY" || r.code.startsWith("UNTYPED:")) {
        unaccountedCount++;
        if (unaccounted.length < 20)
          unaccounted.push(
            `${r.code} ${r.sequence} count ${r.count} in ${pr.name}${r.code.startsWith("UNTYPED:") ? `: ${untypedSamples.get(r.code.slice(8)) ?? ""}` : ""}`,
          );
      } else typedErrors++;
    }
    for (const [i, g] of phaseGap) (phaseReports[i] as PhaseReport).largestGap = g;
    for (const [i, l] of latencies.entries()) {
      if (l.length === 0) continue;
      l.sort((a, b) => a - b);
      const pr = phaseReports[i] as PhaseReport;
      pr.p50Ms = l[Math.floor(l.length * 0.5)] ?? null;
      pr.p99Ms = l[Math.min(l.length - 1, Math.floor(l.length * 0.99))] ?? null;
    }

    // idd's own error/fatal lines and consumer crashes (kafkajs logs every rebalance at error level).
    const workerErrors: string[] = [];
    for (const w of workers) {
      const bad = w.wp.log.filter((l) => /"level":(50|60)/.test(l) && (!l.includes('"component":"kafkajs"') || l.includes('"msg":"Crash')));
      if (bad.length > 0) workerErrors.push(`${w.id}: ${bad.length} error lines, first: ${(bad[0] as string).slice(0, 300)}`);
    }

    const loadMs = loadEnd - loadStart;
    const unrecovered = phaseReports.filter((p) => !p.recovered).map((p) => p.name);
    const phaseFailures = phaseReports.flatMap((p) => p.failures.map((f) => `${p.name}: ${f}`));
    const failures: string[] = [];
    if (phaseFailures.length > 0) failures.push(`${phaseFailures.length} failed phase checks (${phaseFailures.slice(0, 3).join("; ")})`);
    if (report.duplicates.length > 0) failures.push(`${report.duplicates.length} duplicates (G1)`);
    if (report.orderViolations.length > 0) failures.push(`${report.orderViolations.length} order violations (G2)`);
    if (unaccountedCount > 0) failures.push(`${unaccountedCount} requests without numbers and without a typed code (G5)`);
    if (unhandled.length > 0) failures.push(`${unhandled.length} unhandled promise rejections`);
    if (unrecovered.length > 0) failures.push(`not recovered: ${unrecovered.join(", ")}`);
    if (notRun.length > 0) failures.push(`${notRun.length} phases not run`);
    if (unexpectedExits.length > 0) failures.push(`${unexpectedExits.length} unexpected worker exits`);
    if (zombies.length > 0) failures.push(`${zombies.length} workers alive but out of the consumer group`);
    if (records.length === 0) failures.push("no requests were made");
    if (gapViolations.length > 0) failures.push(`${gapViolations.length} gaps not explained by the audit log (G4)`);
    if (records.length > 0 && !audit)
      failures.push(`MongoDB's audit could not be read, so gaps were not checked: ${auditError ?? "no services"}`);

    return {
      profile: profileName,
      seed,
      stackDir,
      workerLogDir,
      phases: phaseReports,
      notRun,
      unrecovered,
      phaseFailures,
      requests: records.length,
      ok,
      typedErrors,
      numbers: report.numbers,
      loadMs,
      requestsPerSecond: loadMs > 0 ? (records.length * 1000) / loadMs : 0,
      duplicates: report.duplicates,
      orderViolations: report.orderViolations,
      gapViolations,
      unaccounted,
      unaccountedCount,
      unhandledRejections: unhandled,
      unexpectedExits,
      zombies,
      workerErrors,
      counters,
      checkMs,
      failures,
      passed: failures.length === 0,
    };
  }
}

/** Grants and reservation maxima of every counter the run issued numbers for. */
async function readAudit(store: Store, records: { sequence: string; period?: string | null; ranges?: unknown }[]) {
  const counters = new Map<string, { sequence: string; period: string | null }>();
  for (const r of records) {
    if (r.ranges) counters.set(`${r.sequence}|${r.period ?? ""}`, { sequence: r.sequence, period: r.period ?? null });
  }
  const audit = new Map<string, CounterAudit>();
  for (const [key, c] of counters) {
    const grants = (await store.grantsOf(c.sequence, c.period)).map((g) => ({ first: g.first, last: g.last }));
    audit.set(key, { grants, reservationMaxima: [] });
  }
  for await (const r of store.reservationRecords([...new Set([...counters.values()].map((c) => c.sequence))])) {
    // Only what workers reserved: replay records the reservation it restored to, never a new one,
    // so a replay that invented a higher max would show as an unexplained gap.
    if (!/^replay(@|$)/.test(r.worker)) audit.get(`${r.sequence}|${r.period ?? ""}`)?.reservationMaxima.push(r.max);
  }
  return audit;
}

// ───────────────────────────── report ─────────────────────────────

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join("  ")).join("\n");
}

const ms = (n: number | null) => (n === null ? "—" : n.toFixed(0));

/** The overload and hostile phases' own numbers (empty when none ran). */
function rawTables(r: ChaosResult): string[] {
  const lines: string[] = [];
  const overloads = r.phases.filter((p) => p.overload);
  if (overloads.length > 0) {
    const rows = [
      ["phase", "burst", "published s", "drained s", "req/s", "p50/p99/max ms", "missing", "duplicates", "error replies", "crashes"],
    ];
    for (const p of overloads) {
      const o = p.overload as OverloadStats;
      rows.push([
        p.name,
        String(o.requests),
        (o.publishMs / 1000).toFixed(1),
        o.drainMs === null ? "NOT DRAINED" : (o.drainMs / 1000).toFixed(1),
        o.repliesPerSecond === null ? "—" : o.repliesPerSecond.toFixed(0),
        `${ms(o.p50Ms)}/${ms(o.p99Ms)}/${ms(o.maxMs)}`,
        String(o.missing),
        String(o.duplicates),
        Object.entries(o.errors)
          .map(([c, n]) => `${c}:${n}`)
          .join(" ") || "—",
        String(o.crashes),
      ]);
    }
    lines.push(
      "overload (open-loop burst from a raw kafkajs producer; every request answered once):",
      table(rows).replace(/^/gm, "  "),
      "",
    );
  }
  for (const p of r.phases.filter((x) => x.hostile)) {
    const h = p.hostile as HostileStats;
    const rows = [["kind", "expected", "sent", "as expected", "wrong", "missing", "duplicates"]];
    for (const [kind, k] of Object.entries(h.kinds))
      rows.push([kind, k.expected, String(k.sent), String(k.asExpected), String(k.wrong), String(k.missing), String(k.duplicates)]);
    lines.push(
      `hostile ${p.name} (raw kafkajs producer): all handled in ${h.drainMs === null ? "NOT ALL HANDLED" : `${(h.drainMs / 1000).toFixed(1)} s`}, ` +
        `dead letters with a wrong source ${h.badSources}, consumer crashes ${h.crashes}, ` +
        `then ${h.fresh.ok}/${h.fresh.requests} fresh requests ok, p50 ${ms(h.fresh.p50Ms)} ms, max ${ms(h.fresh.maxMs)} ms`,
      table(rows).replace(/^/gm, "  "),
      "",
    );
  }
  return lines;
}

export function formatReport(r: ChaosResult): string {
  const rows = [["phase", "requests", "ok", "errors", "largest gap", "p50/p99 ms", "inject→ok ms", "heal→ok ms"]];
  for (const p of r.phases) {
    const errs =
      Object.entries(p.errors)
        .sort(([, a], [, b]) => b - a)
        .map(([c, n]) => `${c}:${n}`)
        .join(" ") || "—";
    rows.push([
      p.name,
      String(p.requests),
      String(p.ok),
      errs,
      String(p.largestGap),
      `${ms(p.p50Ms)}/${ms(p.p99Ms)}`,
      p.kind === "warmup" ? "—" : p.recovered ? ms(p.injectToOkMs) : "NOT RECOVERED",
      p.kind === "warmup" ? "—" : ms(p.healToOkMs),
    ]);
  }
  for (const n of r.notRun) rows.push([n, "not run", "", "", "", "", "", ""]);
  const lines = [
    "",
    `chaos profile ${r.profile} (seed ${r.seed})`,
    table(rows),
    "",
    "phase notes:",
    ...r.phases.filter((p) => p.notes.length > 0).map((p) => `  ${p.name}: ${p.notes.join("; ")}`),
    "",
    ...rawTables(r),
    "gaps per (sequence, period), checked against MongoDB's grants and reservations (G4):",
    table([
      ["counter", "numbers", "largest gap", "largest block", "largest raise", "never granted: killed workers", "replay headroom"],
      ...r.counters.map((c) => [
        c.counter,
        String(c.numbers),
        c.ungranted ? "— (no blocks)" : String(c.largestGap),
        String(c.gaps?.largestBlock ?? "—"),
        String(c.gaps?.largestReservationStep ?? "—"),
        String(c.gaps?.unlogged.killed ?? "—"),
        String(c.gaps?.unlogged.replay ?? "—"),
      ]),
    ]).replace(/^/gm, "  "),
    "",
    `requests ${r.requests} (ok ${r.ok}, typed errors ${r.typedErrors}, unaccounted ${r.unaccountedCount}), numbers ${r.numbers}`,
    `load ${(r.loadMs / 1000).toFixed(1)} s, ${r.requestsPerSecond.toFixed(0)} req/s achieved`,
    `duplicates ${r.duplicates.length}, order violations ${r.orderViolations.length}, unexplained gaps ${r.gapViolations.length} (history checked in ${(r.checkMs / 1000).toFixed(1)} s)`,
  ];
  const list = (title: string, items: string[]) => {
    if (items.length > 0) lines.push(`${title}:`, ...items.slice(0, 20).map((i) => `  ${i}`));
  };
  list("duplicates", r.duplicates);
  list("order violations", r.orderViolations);
  list("unexplained gaps (G4)", r.gapViolations);
  list("unaccounted requests (first 20)", r.unaccounted);
  list("failed phase checks", r.phaseFailures);
  list("unhandled promise rejections", r.unhandledRejections);
  list("unexpected worker exits", r.unexpectedExits);
  list("workers alive but out of the consumer group (replaced)", r.zombies);
  list("worker errors (idd's own error/fatal log lines, consumer crashes)", r.workerErrors);
  lines.push(`worker logs: ${r.workerLogDir}; stack logs: ${join(r.stackDir, "logs")}`);
  lines.push(r.passed ? "chaos: PASSED" : `chaos: FAILED — ${r.failures.join("; ")}`, "");
  return lines.join("\n");
}
