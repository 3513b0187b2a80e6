/**
 * A Redis server of a test's own, so that it can be flushed, killed and restarted empty without
 * disturbing the other tests (which share the stack's Redis). Uses the same redis-server binary the
 * local stack installs; no persistence, as in the stack.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { which } from "../../stack/install.js";

export interface PrivateRedis {
  url: string;
  /** SIGKILLs the server and starts a new, empty one on the same port. */
  restartEmpty(): Promise<void>;
  /** SIGSTOP / SIGCONT: Redis keeps its data and connections but answers nothing meanwhile. */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const bin = which("redis-server");
  if (!bin) throw new Error("redis-server is not installed: run `npm run stack -- up redis` once");
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "idd-redis-"));
  const url = `redis://127.0.0.1:${port}`;
  let proc: ChildProcess;
  const launch = async () => {
    proc = spawn(bin, ["--bind", "127.0.0.1", "--port", String(port), "--dir", dir, "--save", "", "--appendonly", "no"], {
      stdio: "ignore",
    });
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on("error", () => {});
    for (let i = 0; ; i++) {
      try {
        await probe.connect();
        await probe.ping();
        probe.disconnect();
        return;
      } catch {
        if (i > 100) throw new Error(`private redis-server on ${port} did not start`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  const kill = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once("exit", r));
    proc.kill("SIGKILL");
    await exited;
  };
  await launch();
  return {
    url,
    restartEmpty: async () => {
      await kill();
      await launch();
    },
    pause: () => proc.kill("SIGSTOP"),
    resume: () => proc.kill("SIGCONT"),
    stop: async () => {
      proc.kill("SIGCONT");
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
