/** The local stack: `up`, `down` and `status` over its services, usable from code and the CLI. */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { IddError } from "../src/core/errors.js";
import { clusterEnv, GROUPS } from "./cluster.js";
import { install, installLog, type Progress, preflight } from "./install.js";
import {
  ALL_SERVICE_NAMES,
  CLUSTER_SERVICE_NAMES,
  clusterEnvFile,
  dataDir,
  envFile,
  layoutFromEnv,
  logFile,
  pidFile,
  SERVICE_NAMES,
  type ServiceName,
  type StackLayout,
} from "./paths.js";
import { portFree, runningPid, spawnDetached, stopProcess, withFileLock } from "./proc.js";
import { securedEnvFile, writeSecuredEnv } from "./secrets.js";
import { SERVICES, type StackEnv, stackEnv } from "./services.js";

export interface UpResult {
  env: StackEnv;
  /** Services this call started (the others were running already). */
  started: ServiceName[];
  layout: StackLayout;
  /** The cluster profile's endpoints (cluster.env), when one of its services runs. */
  cluster?: Record<string, string>;
}

const quiet: Progress = () => {};

/** A uid and gid to run a service as (the network-fault harness's hosts, stack/netfaults.ts). */
export type RunAs = Partial<Record<ServiceName, { uid: number; gid: number }>>;

export async function up(
  opts: { services?: readonly ServiceName[]; layout?: StackLayout; progress?: Progress; runAs?: RunAs } = {},
): Promise<UpResult> {
  const l = opts.layout ?? layoutFromEnv();
  // One `up` at a time per stack folder: test files may ask for the same services at once.
  return withFileLock(join(l.dir, "up.lock"), () => upLocked(l, opts.services ?? SERVICE_NAMES, opts.progress ?? quiet, opts.runAs ?? {}));
}

async function upLocked(l: StackLayout, wanted: readonly ServiceName[], progress: Progress, runAs: RunAs): Promise<UpResult> {
  const toStart = wanted.filter((s) => runningPid(pidFile(l, s), l.dir) === undefined);

  const tools = preflight(l, toStart);
  if (tools.length > 0) throw new IddError("STACK_TOOL_MISSING", tools.join("\n"));
  const taken: string[] = [];
  for (const s of toStart) {
    for (const port of SERVICES[s].ports(l)) {
      if (!(await portFree(port)))
        taken.push(
          `port ${port} (${s}) on 127.0.0.1 is already in use by a process the stack did not start; free it or set IDD_STACK_PORT_BASE`,
        );
    }
  }
  if (taken.length > 0) throw new IddError("STACK_PORT_IN_USE", taken.join("\n"));

  await install(l, toStart, progress);
  mkdirSync(l.dir, { recursive: true });

  const started: ServiceName[] = [];
  try {
    await Promise.all(
      toStart.map(async (s) => {
        const launch = await SERVICES[s].prepare(l);
        const as = runAs[s];
        // Its data folder becomes the user's (a Sentinel rewrites its configuration there).
        if (as) spawnSync("chown", ["-R", `${as.uid}:${as.gid}`, dataDir(l, s)]);
        progress(`starting ${s}${as ? ` as uid ${as.uid}` : ""}`);
        const child = spawnDetached({
          ...launch,
          env: { ...process.env, ...launch.env },
          log: logFile(l, s),
          pidFile: pidFile(l, s),
          ...(as && { uid: as.uid, gid: as.gid }),
        });
        started.push(s);
        let exit: string | undefined;
        child.once("exit", (code, sig) => {
          exit = `${code ?? sig}`;
        });
        await waitReady(
          l,
          s,
          logFile(l, s),
          () => exit,
          () => SERVICES[s].ready(l),
        );
        progress(`${s} ready on 127.0.0.1:${SERVICES[s].ports(l)[0]}`);
      }),
    );
    // Groups of the cluster profile whose members all run settle as a whole (a restarted member too).
    const running = (s: ServiceName) => runningPid(pidFile(l, s), l.dir) !== undefined;
    for (const g of GROUPS.filter((g) => g.members.some((m) => wanted.includes(m)) && g.members.every(running))) {
      const log = installLog(l, "cluster");
      await g.settle?.(l, log);
      await waitReady(
        l,
        g.name,
        log,
        () => undefined,
        () => g.settled(l),
      );
      progress(`${g.name} settled`);
    }
  } catch (e) {
    await down({ layout: l, services: started });
    throw e;
  }

  writeEnvFiles(l);
  const clusterRuns = CLUSTER_SERVICE_NAMES.some((s) => runningPid(pidFile(l, s), l.dir) !== undefined);
  return { env: stackEnv(l), started, layout: l, ...(clusterRuns && { cluster: clusterEnv(l) }) };
}

/**
 * `env` and `secured.env` while a default service runs, `cluster.env` while a cluster service runs;
 * each removed when none does.
 */
function writeEnvFiles(l: StackLayout): void {
  const runs = (names: readonly ServiceName[]) => names.some((s) => runningPid(pidFile(l, s), l.dir) !== undefined);
  const write = (file: string, env: object) =>
    writeFileSync(
      file,
      `${Object.entries(env)
        .map(([k, v]) => `${k}=${v}`)
        .join("\n")}\n`,
      { mode: 0o600 }, // the registry's password is in env
    );
  if (runs(SERVICE_NAMES)) {
    write(envFile(l), stackEnv(l));
    writeSecuredEnv(l);
  } else {
    rmSync(envFile(l), { force: true });
    rmSync(securedEnvFile(l), { force: true });
  }
  if (runs(CLUSTER_SERVICE_NAMES)) write(clusterEnvFile(l), clusterEnv(l));
  else rmSync(clusterEnvFile(l), { force: true });
}

async function waitReady(
  l: StackLayout,
  what: string,
  log: string,
  exited: () => string | undefined,
  ready: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + l.readyTimeoutMs;
  for (;;) {
    const code = exited();
    if (code !== undefined) throw new IddError("STACK_EXITED", `${what} exited while starting (${code}); see ${log}`);
    if (Date.now() >= deadline) {
      throw new IddError("STACK_NOT_READY", `${what} not ready after ${l.readyTimeoutMs / 1000}s; see ${log}`);
    }
    if (await ready()) return;
    await sleep(250);
  }
}

export async function down(
  opts: { services?: readonly ServiceName[]; layout?: StackLayout; progress?: Progress } = {},
): Promise<ServiceName[]> {
  const l = opts.layout ?? layoutFromEnv();
  const progress = opts.progress ?? quiet;
  const stopped: ServiceName[] = [];
  await Promise.all(
    (opts.services ?? ALL_SERVICE_NAMES).map(async (s) => {
      const pid = runningPid(pidFile(l, s), l.dir);
      if (pid === undefined) return;
      const how = await stopProcess(pid);
      rmSync(pidFile(l, s), { force: true });
      stopped.push(s);
      progress(`${s} ${how} (pid ${pid})`);
    }),
  );
  writeEnvFiles(l);
  return stopped;
}

export interface ServiceStatus {
  service: ServiceName;
  pid?: number;
  port: number;
  ready: boolean;
  /** Resident memory in KiB, from /proc (Linux). */
  rssKiB?: number;
}

export async function status(opts: { layout?: StackLayout } = {}): Promise<ServiceStatus[]> {
  const l = opts.layout ?? layoutFromEnv();
  // The default profile's services always, the cluster profile's while they run.
  const shown = ALL_SERVICE_NAMES.filter((s) => SERVICE_NAMES.includes(s) || runningPid(pidFile(l, s), l.dir) !== undefined);
  return Promise.all(
    shown.map(async (s) => {
      const pid = runningPid(pidFile(l, s), l.dir);
      const port = SERVICES[s].ports(l)[0] as number;
      if (pid === undefined) return { service: s, port, ready: false };
      return { service: s, pid, port, ready: await SERVICES[s].ready(l), rssKiB: rssKiB(pid) };
    }),
  );
}

function rssKiB(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}
