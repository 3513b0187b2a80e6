/** Starting, finding and stopping the stack's own processes. Only pids we wrote are ever signalled. */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

export function spawnDetached(opts: {
  cmd: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  log: string;
  pidFile: string;
  /** Run as this user (root only). */
  uid?: number;
  gid?: number;
}): ChildProcess {
  mkdirSync(dirname(opts.log), { recursive: true });
  mkdirSync(dirname(opts.pidFile), { recursive: true });
  const fd = openSync(opts.log, "a");
  try {
    const child = spawn(opts.cmd, opts.args, {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: ["ignore", fd, fd],
      ...(opts.uid !== undefined && { uid: opts.uid }),
      ...(opts.gid !== undefined && { gid: opts.gid }),
    });
    if (child.pid === undefined) throw new Error(`could not start ${opts.cmd}`);
    writeFileSync(opts.pidFile, `${child.pid}\n`);
    child.unref();
    return child;
  } finally {
    closeSync(fd);
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * True when `pid` runs and was started by the stack in `owner`: every stack process runs with its
 * working directory inside the stack folder (checked through /proc where there is one; the
 * environment is not used because redis-server overwrites it with its process title).
 */
export function isOurs(pid: number, owner: string): boolean {
  if (!isAlive(pid)) return false;
  if (!existsSync("/proc/self/cwd")) return true;
  try {
    const cwd = readlinkSync(`/proc/${pid}/cwd`);
    return cwd === owner || cwd.startsWith(`${owner}/`);
  } catch {
    return false;
  }
}

/** The pid recorded in `file` if that process is still ours, else undefined (a stale file is removed). */
export function runningPid(file: string, owner: string): number | undefined {
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, "utf8").trim());
  if (Number.isInteger(pid) && pid > 0 && isOurs(pid, owner)) return pid;
  rmSync(file, { force: true });
  return undefined;
}

/** SIGTERM the process group, then SIGKILL it if it has not gone after `graceMs`. */
export async function stopProcess(pid: number, graceMs = 20_000): Promise<"stopped" | "killed"> {
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
    } catch {
      try {
        process.kill(pid, sig);
      } catch {
        /* already gone */
      }
    }
  };
  signal("SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return "stopped";
    await sleep(100);
  }
  signal("SIGKILL");
  while (isAlive(pid)) await sleep(50);
  return "killed";
}

/**
 * Takes `file` as a lock between processes (it holds the holder's pid), waiting while another live
 * process holds it; one left by a process that is gone is taken over. Returns its release.
 */
export async function takeFileLock(file: string): Promise<() => void> {
  mkdirSync(dirname(file), { recursive: true });
  for (;;) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: "wx" });
      let held = true;
      return () => {
        if (held) rmSync(file, { force: true });
        held = false;
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      let holder = Number.NaN;
      try {
        holder = Number(readFileSync(file, "utf8").trim() || Number.NaN);
      } catch (r) {
        if ((r as NodeJS.ErrnoException).code === "ENOENT") continue; // released meanwhile: try again
        throw r;
      }
      if (Number.isInteger(holder) && holder !== process.pid && !isAlive(holder)) rmSync(file, { force: true });
      else await sleep(200);
    }
  }
}

/** Runs `fn` holding `file` as a lock between processes (takeFileLock). */
export async function withFileLock<T>(file: string, fn: () => Promise<T>): Promise<T> {
  const release = await takeFileLock(file);
  try {
    return await fn();
  } finally {
    release();
  }
}

export function portFree(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}
