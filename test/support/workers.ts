/** Real worker processes (`idd worker`), started and killed for real. */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type { ServiceSettings } from "../../src/config/services.js";
import { REPO_ROOT } from "../../stack/paths.js";

export interface WorkerProcess {
  id: string;
  proc: ChildProcess;
  /** Its stderr lines (the log), and anything it wrote to stdout. */
  log: string[];
  /** Resolves when the worker logged a partition assignment (any, including none). */
  assigned: Promise<void>;
  exited: Promise<number | null>;
}

/**
 * The services with a MongoDB database of the test's own. The stack's MongoDB keeps its data across
 * runs while its Redis does not: a shared database would hold reservations of earlier runs, which
 * (rightly) makes workers treat the empty Redis as lost state.
 */
export function ownDatabase(s: ServiceSettings, prefix: string): ServiceSettings {
  const u = new URL(s.mongodbUrl);
  u.pathname = `/${prefix}_${randomUUID().replaceAll("-", "")}`;
  return { ...s, mongodbUrl: u.toString() };
}

export function serviceEnv(s: ServiceSettings): NodeJS.ProcessEnv {
  return {
    KAFKA_BROKERS: s.kafkaBrokers.join(","),
    REDIS_URL: s.redisUrl,
    MONGODB_URL: s.mongodbUrl,
    SCHEMA_REGISTRY_URL: s.schemaRegistryUrl,
  };
}

/** An `idd worker` process, from this checkout or the one at `root` (the bench's A/B, or another release's: test/support/old-checkout.ts), on this node binary or `node`. */
export function startWorker(
  id: string,
  env: NodeJS.ProcessEnv,
  root = REPO_ROOT,
  node = process.execPath,
  as?: { uid: number; gid: number },
): WorkerProcess {
  const proc = spawn(node, ["--import", "tsx", join(root, "src/cli/main.ts"), "worker"], {
    cwd: root,
    ...(as && { uid: as.uid, gid: as.gid }), // a host of the network-fault harness (stack/netfaults.ts)
    env: { ...process.env, ...env, IDD_WORKER_ID: id, LOG_LEVEL: process.env.IDD_TEST_WORKER_LOG_LEVEL ?? "info" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  proc.stdout?.on("data", (d: Buffer) => log.push(...d.toString().split("\n").filter(Boolean)));
  const log: string[] = [];
  let onAssigned!: () => void;
  const assigned = new Promise<void>((r) => {
    onAssigned = r;
  });
  let buf = "";
  proc.stderr?.on("data", (d: Buffer) => {
    buf += d.toString();
    let i = buf.indexOf("\n");
    while (i >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      log.push(line);
      if (line.includes('"partitions assigned"')) onAssigned();
      i = buf.indexOf("\n");
    }
  });
  const exited = new Promise<number | null>((r) => proc.once("exit", (code) => r(code)));
  return { id, proc, log, assigned, exited };
}

/** The workers' warnings and errors (pino levels 40 and up), the last `max`: what a failed check shows beside the client's output. */
export function workerTrouble(ws: WorkerProcess[], max = 30): string {
  const lines = ws.flatMap((w) => w.log.filter((l) => /"level":[4-6]\d/.test(l)).map((l) => `${w.id}: ${l.slice(0, 600)}`));
  return lines.length === 0 ? "workers logged no warning" : `workers' last warnings:\n${lines.slice(-max).join("\n")}`;
}

export async function stopWorker(w: WorkerProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<number | null> {
  if (w.proc.exitCode !== null || w.proc.signalCode !== null) return w.proc.exitCode;
  w.proc.kill(signal);
  return w.exited;
}
