/**
 * The pool under test: real `idd worker` processes started, signalled and replaced by the phases,
 * and the consumer group as the broker sees it.
 */
import { appendFileSync, createWriteStream, existsSync, readFileSync, rmSync, type WriteStream } from "node:fs";
import { join } from "node:path";
import { ServedAdmin } from "../../stack/kafka-admin.js";
import { sleep, withTimeout } from "../support/wait.js";
import { startWorker, type WorkerProcess } from "../support/workers.js";
import type { PhaseState } from "./records.js";

export interface PoolWorker {
  id: string;
  wp: WorkerProcess;
  file: WriteStream;
  /** Set before we signal it, so its exit is not reported as a crash. */
  expectExit: boolean;
  paused: boolean;
  /** The network profile's host (uid) it runs as, if any. */
  host?: string;
  exit?: string;
}

/** The consumer group as the broker sees it: worker id → partitions of the request topic. */
export interface GroupView {
  state: string;
  members: Map<string, number[]>;
}

export const showGroup = (v: GroupView | undefined) =>
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
export function stopLeftoverWorkers(stackDir: string): number[] {
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

export const alive = (w: PoolWorker) => w.wp.proc.exitCode === null && w.wp.proc.signalCode === null && !w.expectExit;

const running = (w: PoolWorker) => w.wp.proc.exitCode === null && w.wp.proc.signalCode === null;

export interface PoolOptions {
  /** The private stack's folder (the pid list of the run's workers) and where their logs go. */
  stackDir: string;
  workerLogDir: string;
  /** The workers' environment: services, topics, consumer group, small blocks. */
  env: NodeJS.ProcessEnv;
  brokers: string[];
  random: () => number;
  log: (line: string) => void;
  /** The phase in progress, named in the report of a worker that exits on its own. */
  phaseName: () => string | undefined;
  /** A worker is SIGKILLed now: its unlogged blocks may show as gaps in this phase (G4). */
  onKill: () => void;
}

export type Victim = { w: PoolWorker; partitions: string };

export class WorkerPool {
  readonly workers: PoolWorker[] = [];
  /** Workers that exited without being told to. */
  readonly unexpectedExits: string[] = [];
  /** Workers that stayed alive but out of the consumer group (they serve nothing, silently). */
  readonly zombies: string[] = [];
  #started = 0;
  #observer: ServedAdmin | undefined;
  /** The environment of the workers started next (replaceAll changes it). */
  #env: NodeJS.ProcessEnv;

  constructor(private readonly o: PoolOptions) {
    this.#env = o.env;
  }

  /**
   * Starts a worker; `as`, a uid to run it under (a host of the network profile, stack/netfaults.ts);
   * `own`, its worker id (default w1, w2, …) and variables added to the pool's environment.
   */
  start(as?: { uid: number; gid: number; host?: string }, own: { id?: string; env?: NodeJS.ProcessEnv } = {}): PoolWorker {
    const { stackDir, workerLogDir, log } = this.o;
    const env = { ...this.#env, ...own.env };
    ++this.#started;
    const id = own.id ?? `w${this.#started}`;
    const wp = startWorker(id, env, undefined, undefined, as);
    // Recorded so that a run killed outright (its finally never ran) has its workers stopped by the next one.
    if (wp.proc.pid !== undefined) appendFileSync(join(stackDir, WORKER_PIDS), `${wp.proc.pid} ${env.IDD_GROUP_ID}\n`);
    const file = createWriteStream(join(workerLogDir, `${id}.log`));
    wp.proc.stderr?.on("data", (d: Buffer) => file.write(d));
    const w: PoolWorker = { id, wp, file, expectExit: false, paused: false, ...(as?.host && { host: as.host }) };
    wp.proc.once("exit", (code, signal) => {
      w.exit = signal ?? `exit ${code}`;
      if (!w.expectExit) {
        const line = `${id} exited on its own (${w.exit}) during ${this.o.phaseName() ?? "start-up"}; log ${join(workerLogDir, `${id}.log`)}`;
        this.unexpectedExits.push(line);
        log(`WORKER EXITED: ${line}`);
      }
    });
    this.workers.push(w);
    return w;
  }

  /** Workers alive and not stopped (SIGSTOP). */
  live(): PoolWorker[] {
    return this.workers.filter((w) => alive(w) && !w.paused);
  }

  async groupView(): Promise<GroupView | undefined> {
    const env = this.#env;
    this.#observer ??= new ServedAdmin(this.o.brokers, "idd-chaos-observer");
    try {
      const g = await withTimeout(this.#observer.group(env.IDD_GROUP_ID as string), 5000, "describeGroups");
      if (!g) return undefined;
      const members = new Map<string, number[]>();
      for (const m of g.members) {
        const ps = [...(m.assignment[env.IDD_REQUEST_TOPIC as string] ?? [])].sort((x, y) => x - y);
        members.set(m.clientId.replace(/^idd-/, ""), ps);
      }
      return { state: g.state, members };
    } catch {
      return undefined;
    }
  }

  /** A live worker, preferring one that owns partitions right now (so the fault hits something). */
  async pickVictim(): Promise<Victim | undefined> {
    const view = await this.groupView();
    const candidates = this.live();
    const owning = candidates.filter((w) => (view?.members.get(w.id)?.length ?? 0) > 0);
    const from = owning.length > 0 ? owning : candidates;
    const w = from[Math.floor(this.o.random() * from.length)];
    if (!w) return undefined;
    const ps = view?.members.get(w.id);
    return { w, partitions: ps ? `[${ps.join(",")}]` : "not in the group" };
  }

  describe(v: Victim): string {
    return `${v.w.id} (pid ${v.w.wp.proc.pid}, partitions ${v.partitions})`;
  }

  /** SIGKILL, as a crash would; resolves once it is gone. */
  async kill(w: PoolWorker): Promise<void> {
    w.expectExit = true;
    this.o.onKill();
    w.wp.proc.kill("SIGKILL");
    await w.wp.exited;
  }

  /**
   * After a phase: every live worker must be back in the consumer group. One that stays out serves
   * nothing while looking healthy; it is reported and replaced, so the run goes on at full strength.
   */
  async checkMembership(p: PhaseState): Promise<void> {
    const deadline = Date.now() + 15_000; // a worker started just now needs about 5 s to join
    let view: GroupView | undefined;
    let missing: PoolWorker[] = [];
    for (;;) {
      view = await this.groupView();
      const members = view?.members;
      missing = members ? this.live().filter((w) => !members.has(w.id)) : [];
      if (view && view.state === "Stable" && missing.length === 0) break;
      if (Date.now() >= deadline) break;
      await sleep(500);
    }
    p.notes.push(`group ${showGroup(view)}`);
    for (const w of missing) {
      const crash = crashOf(w);
      const line = `${w.id} alive but not in the consumer group after ${p.name}${crash ? ` — its log: ${crash}` : ""}`;
      this.zombies.push(line);
      this.o.log(`  ZOMBIE: ${line}`);
      await this.kill(w);
      const n = this.start();
      p.notes.push(`ZOMBIE ${w.id}${crash ? ` (${crash})` : ""}: killed, replaced by ${n.id}`);
    }
  }

  /** Counts "Kafka consumer crashed" lines in the worker logs written since the mark was taken. */
  crashMark(): () => number {
    const from = new Map(this.workers.map((w) => [w, w.wp.log.length]));
    return () =>
      this.workers.reduce(
        (n, w) => n + w.wp.log.slice(from.get(w) ?? 0).filter((l) => l.includes('"msg":"Kafka consumer crashed"')).length,
        0,
      );
  }

  /**
   * Every worker stopped (SIGTERM, so each appends its grants; SIGKILL after 30 s), and only then as
   * many started with `env` instead: never two pools of different settings in the group at once.
   * Resolves with the new workers' ids once each has its first assignment.
   */
  async replaceAll(env: NodeJS.ProcessEnv): Promise<string[]> {
    const live = this.workers.filter(running);
    for (const w of live) {
      w.expectExit = true;
      w.wp.proc.kill("SIGTERM");
    }
    await Promise.all(live.map((w) => withTimeout(w.wp.exited, 30_000, "worker exit").catch(() => {})));
    const stuck = live.filter(running);
    if (stuck.length > 0) this.o.onKill();
    for (const w of stuck) w.wp.proc.kill("SIGKILL");
    await Promise.all(stuck.map((w) => w.wp.exited));
    this.#env = env;
    const fresh = live.map(() => this.start());
    await this.firstAssignment(fresh, "the new workers' first assignment");
    return fresh.map((w) => w.id);
  }

  /**
   * Resolves once each of `ws` logged its first assignment; after 90 s, fails with what the broker
   * says of the group and the last lines of each worker still waiting (why it is not in).
   */
  async firstAssignment(ws: PoolWorker[], what: string): Promise<void> {
    const done = new Set<PoolWorker>();
    // A worker that exits first (a refused start) fails the wait at once.
    const each = (w: PoolWorker) =>
      Promise.race([
        w.wp.assigned.then(() => done.add(w)),
        w.wp.exited.then((code) => {
          throw new Error(`${w.id} exited (${w.exit ?? `exit ${code}`}) before its first assignment`);
        }),
      ]);
    try {
      await withTimeout(Promise.all(ws.map(each)), 90_000, what);
    } catch (e) {
      const waiting = ws.filter((w) => !done.has(w));
      const tails = waiting.map(
        (w) =>
          `${w.id} (${w.exit ?? "running"}): ${
            w.wp.log
              .slice(-3)
              .map((l) => l.slice(0, 300))
              .join(" | ") || "no log"
          }`,
      );
      throw new Error(`${(e as Error).message}; group ${showGroup(await this.groupView())}; still waiting: ${tails.join("; ")}`);
    }
  }

  /** At once, without waiting: for a process that is exiting. */
  killAll(): void {
    for (const w of this.workers) if (running(w)) w.wp.proc.kill("SIGKILL");
  }

  /**
   * SIGTERM first, so workers append the grants they hold (the audit is then complete); SIGKILL what
   * stays after 20 s. Returns the ids of the workers killed so: each is a failure of its own, since
   * its blocks then show in the audit as given up with no release.
   */
  async stop(): Promise<string[]> {
    const live = this.workers.filter(running);
    for (const w of live) {
      w.expectExit = true;
      w.wp.proc.kill("SIGTERM");
    }
    await Promise.all(live.map((w) => withTimeout(w.wp.exited, 20_000, "worker exit").catch(() => {})));
    const stuck = this.workers.filter(running).map((w) => w.id);
    for (const w of this.workers) {
      w.expectExit = true;
      if (running(w)) w.wp.proc.kill("SIGKILL");
    }
    await Promise.all(this.workers.map((w) => withTimeout(w.wp.exited, 10_000, "worker exit").catch(() => {})));
    await this.#observer?.close().catch(() => {});
    this.#observer = undefined;
    return stuck;
  }

  /** Ends the log files and forgets the pid list (every worker has exited). */
  close(): void {
    for (const w of this.workers) w.file.end();
    rmSync(join(this.o.stackDir, WORKER_PIDS), { force: true });
  }
}
