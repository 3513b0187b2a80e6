/**
 * What the open-loop benchmark loads: a pool of echo-service processes (the upper limit) or of idd
 * worker processes, each on a request topic of its own, ready once the pool's members together
 * hold every partition of it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import type { ServiceSettings } from "../../src/config/services.js";
import { REPO_ROOT } from "../../stack/paths.js";
import { freePort } from "../support/private-redis.js";
import { serviceEnv, startWorker, stopWorker, type WorkerProcess } from "../support/workers.js";

export interface Target {
  name: string;
  requestTopic: string;
  pids: number[];
  /** idd workers: their /metrics addresses (the step phases are read from there). */
  metricsUrls?: string[];
  /** Stops the processes; returns their last log line each (their counts). */
  stop(): Promise<string[]>;
}

interface Member {
  proc: ChildProcess;
  log: string[];
  exited: Promise<unknown>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Environment that makes a node process write a CPU profile to `dir` when it exits (test/bench/cpu-profile.mjs). */
export const profileEnv = (dir: string): NodeJS.ProcessEnv => ({
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import ${join(REPO_ROOT, "test/bench/cpu-profile.mjs")}`.trim(),
  BENCH_CPU_PROFILE_DIR: dir,
});

/** Waits until the members' latest assignments cover partitions 0..n-1 exactly once. */
async function whenBalanced(name: string, members: Member[], partitions: number, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const latest = members.map((m) => {
      for (let i = m.log.length - 1; i >= 0; i--) {
        const line = m.log[i] as string;
        if (!line.includes('"partitions assigned"')) continue;
        try {
          return (JSON.parse(line) as { partitions: number[] }).partitions;
        } catch {
          return undefined;
        }
      }
      return undefined;
    });
    const all = latest.flatMap((p) => p ?? []);
    if (latest.every((p) => p !== undefined) && all.length === partitions && new Set(all).size === partitions) return;
    const dead = members.find((m) => m.proc.exitCode !== null || m.proc.signalCode !== null);
    if (dead) throw new Error(`${name}: a process exited while starting: ${dead.log.slice(-5).join("\n")}`);
    if (Date.now() > deadline) throw new Error(`${name}: partitions not balanced after ${timeoutMs} ms: ${JSON.stringify(latest)}`);
    await sleep(100);
  }
}

/** The workers' warning and error lines, counted by message (and error text). */
function warnings(lines: string[]): string[] {
  const counts = new Map<string, number>();
  for (const line of lines) {
    let o: { level?: number; msg?: string; err?: string; error?: string };
    try {
      o = JSON.parse(line);
    } catch {
      continue;
    }
    if ((o.level ?? 0) < 40) continue;
    const k = `level ${o.level}: ${o.msg}${o.err || o.error ? ` (${String(o.err ?? o.error).slice(0, 160)})` : ""}`;
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${n}× ${k}`);
}

/** Which echo: kafkajs (test/bench/echo.ts), librdkafka (a Python with confluent-kafka) or @platformatic/kafka (a node ≥ 22.22). */
export type EchoKind = { client: "kafkajs" } | { client: "librdkafka"; python: string } | { client: "platformatic"; node: string };
const ECHO_NAMES = { kafkajs: "echo", librdkafka: "echo-rdk", platformatic: "echo-plt" } as const;

/** An echo process of `kind`. */
function startEcho(id: string, env: NodeJS.ProcessEnv, kind: EchoKind): Member {
  const [command, args] =
    kind.client === "librdkafka"
      ? [kind.python, [join(REPO_ROOT, "test/bench/echo-librdkafka.py")]]
      : kind.client === "platformatic"
        ? [kind.node, ["--import", "tsx", join(REPO_ROOT, "test/bench/echo-platformatic.ts")]]
        : [process.execPath, ["--import", "tsx", join(REPO_ROOT, "test/bench/echo.ts")]];
  const proc = spawn(command, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env, ECHO_ID: id },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const log: string[] = [];
  let buf = "";
  proc.stderr?.on("data", (d: Buffer) => {
    buf += d.toString();
    for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
      log.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  });
  const exited = new Promise((r) => proc.once("exit", r));
  return { proc, log, exited };
}

/** `processes` echo services of `kind` on `requestTopic` (created by the caller with `partitions` partitions). */
export async function startEchoPool(
  brokers: string[],
  requestTopic: string,
  partitions: number,
  processes = 3,
  extraEnv: NodeJS.ProcessEnv = {},
  kind: EchoKind = { client: "kafkajs" },
): Promise<Target> {
  const env = { KAFKA_BROKERS: brokers.join(","), ECHO_TOPIC: requestTopic, ECHO_GROUP: `${requestTopic}.group`, ...extraEnv };
  const members = Array.from({ length: processes }, (_, i) => startEcho(`echo-${requestTopic}-${i}`, env, kind));
  try {
    await whenBalanced("echo", members, partitions);
  } catch (e) {
    for (const m of members) m.proc.kill("SIGKILL");
    await Promise.all(members.map((m) => m.exited));
    throw e;
  }
  return {
    name: ECHO_NAMES[kind.client],
    requestTopic,
    pids: members.map((m) => m.proc.pid as number),
    async stop() {
      for (const m of members) m.proc.kill("SIGTERM");
      await Promise.all(members.map((m) => m.exited));
      return members.map((m) => m.log.at(-1) ?? "");
    },
  };
}

/** `processes` idd workers with a request topic, group and dead-letter topic of their own (from the checkout at `root` and on the node binary `node`, if given). */
export async function startIddPool(
  services: ServiceSettings,
  name: string,
  partitions: number,
  processes = 3,
  extraEnv: NodeJS.ProcessEnv = {},
  onRetry?: (reason: string) => void,
  root?: string,
  node?: string,
): Promise<Target> {
  const requestTopic = `${name}.requests`;
  const env = {
    ...serviceEnv(services),
    IDD_REQUEST_TOPIC: requestTopic,
    IDD_DLQ_TOPIC: `${name}.dlq`,
    IDD_GROUP_ID: `${name}.group`,
    IDD_REQUEST_PARTITIONS: String(partitions),
    IDD_AUTO_CREATE_SEQUENCES: "true",
    LOG_LEVEL: "warn", // startWorker sets info: it needs the "partitions assigned" line; nothing is logged per request
    ...extraEnv,
  };
  let workers: WorkerProcess[] = [];
  let ports: number[] = [];
  for (let attempt = 1; ; attempt++) {
    ports = [];
    for (let i = 0; i < processes; i++) ports.push(await freePort());
    workers = ports.map((port, i) => startWorker(`${name}-w${i}`, { ...env, IDD_HTTP_PORT: String(port) }, root, node));
    try {
      await whenBalanced("idd", workers, partitions);
      break;
    } catch (e) {
      await Promise.all(workers.map((w) => stopWorker(w, "SIGKILL")));
      // A worker that fails to start on a loaded machine (seen: Redis's first command before its
      // connection is up) is started again; twice is a real failure.
      if (attempt === 2) throw e;
      onRetry?.((e as Error).message);
    }
  }
  return {
    name: "idd",
    requestTopic,
    pids: workers.map((w) => w.proc.pid as number),
    metricsUrls: ports.map((p) => `http://127.0.0.1:${p}/metrics`),
    async stop() {
      await Promise.all(workers.map((w) => stopWorker(w)));
      return [
        ...workers.map((w) => w.log.findLast((l) => l.includes('"worker stopped"')) ?? w.log.at(-1) ?? ""),
        ...warnings(workers.flatMap((w) => w.log)),
      ];
    },
  };
}
