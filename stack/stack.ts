/** The local stack: `up`, `down` and `status` over the four services, usable from code and the CLI. */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { IddError } from "../src/core/errors.js";
import { install, type Progress, preflight } from "./install.js";
import { envFile, layoutFromEnv, logFile, pidFile, SERVICE_NAMES, type ServiceName, type StackLayout } from "./paths.js";
import { portFree, runningPid, spawnDetached, stopProcess } from "./proc.js";
import { securedEnvFile, writeSecuredEnv } from "./secrets.js";
import { SERVICES, type StackEnv, stackEnv } from "./services.js";

export interface UpResult {
  env: StackEnv;
  /** Services this call started (the others were running already). */
  started: ServiceName[];
  layout: StackLayout;
}

const quiet: Progress = () => {};

export async function up(opts: { services?: readonly ServiceName[]; layout?: StackLayout; progress?: Progress } = {}): Promise<UpResult> {
  const l = opts.layout ?? layoutFromEnv();
  const progress = opts.progress ?? quiet;
  const wanted = opts.services ?? SERVICE_NAMES;
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
        progress(`starting ${s}`);
        const child = spawnDetached({ ...launch, env: { ...process.env, ...launch.env }, log: logFile(l, s), pidFile: pidFile(l, s) });
        started.push(s);
        let exit: string | undefined;
        child.once("exit", (code, sig) => {
          exit = `${code ?? sig}`;
        });
        await waitReady(l, s, () => exit);
        await SERVICES[s].afterReady?.(l);
        progress(`${s} ready on 127.0.0.1:${SERVICES[s].ports(l)[0]}`);
      }),
    );
  } catch (e) {
    await down({ layout: l, services: started });
    throw e;
  }

  const env = stackEnv(l);
  writeFileSync(
    envFile(l),
    `${Object.entries(env)
      .map(([k, v]) => `${k}=${v}`)
      .join("\n")}\n`,
    { mode: 0o600 }, // the registry's password is in it
  );
  writeSecuredEnv(l);
  return { env, started, layout: l };
}

async function waitReady(l: StackLayout, s: ServiceName, exited: () => string | undefined): Promise<void> {
  const deadline = Date.now() + l.readyTimeoutMs;
  for (;;) {
    const code = exited();
    if (code !== undefined) throw new IddError("STACK_EXITED", `${s} exited while starting (${code}); see ${logFile(l, s)}`);
    if (Date.now() >= deadline) {
      throw new IddError("STACK_NOT_READY", `${s} not ready after ${l.readyTimeoutMs / 1000}s; see ${logFile(l, s)}`);
    }
    if (await SERVICES[s].ready(l)) return;
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
    (opts.services ?? SERVICE_NAMES).map(async (s) => {
      const pid = runningPid(pidFile(l, s), l.dir);
      if (pid === undefined) return;
      const how = await stopProcess(pid);
      rmSync(pidFile(l, s), { force: true });
      stopped.push(s);
      progress(`${s} ${how} (pid ${pid})`);
    }),
  );
  if (SERVICE_NAMES.every((s) => runningPid(pidFile(l, s), l.dir) === undefined)) {
    rmSync(envFile(l), { force: true });
    rmSync(securedEnvFile(l), { force: true });
  }
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
  return Promise.all(
    SERVICE_NAMES.map(async (s) => {
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
