/**
 * A MongoDB-protocol server of a test's own (the FerretDB binary the local stack builds, SQLite
 * files in a temporary folder), so a test can take MongoDB away for real and bring it back with its
 * data, without disturbing the tests that share the stack's server.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { ferretBin } from "../../stack/install.js";
import { layoutFromEnv } from "../../stack/paths.js";
import { freePort } from "./private-redis.js";

export interface PrivateMongo {
  url: string;
  /** SIGKILLs the server (an outage); its data stays on disk. */
  kill(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function startPrivateMongo(): Promise<PrivateMongo> {
  const bin = ferretBin(layoutFromEnv());
  if (!existsSync(bin)) throw new Error(`FerretDB is not built (${bin}): run \`npm run stack -- up mongodb\` once`);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "idd-ferretdb-"));
  const url = `mongodb://127.0.0.1:${port}/idd`;
  let proc: ChildProcess | undefined;
  const start = async () => {
    proc = spawn(
      bin,
      [
        "--handler=sqlite",
        `--sqlite-url=file:${dir}/`,
        `--state-dir=${dir}`,
        `--listen-addr=127.0.0.1:${port}`,
        "--debug-addr=-",
        "--telemetry=disable",
        "--log-level=error",
      ],
      { cwd: dir, stdio: "ignore" },
    );
    for (let i = 0; ; i++) {
      const probe = new MongoClient(url, { serverSelectionTimeoutMS: 200, connectTimeoutMS: 200 });
      try {
        await probe.db("admin").command({ ping: 1 });
        return;
      } catch {
        if (i > 100) throw new Error(`private FerretDB on ${port} did not start`);
        await new Promise((r) => setTimeout(r, 100));
      } finally {
        await probe.close().catch(() => {});
      }
    }
  };
  const kill = async () => {
    const p = proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill("SIGKILL");
    await exited;
  };
  await start();
  const stop = async () => {
    await kill();
    rmSync(dir, { recursive: true, force: true });
  };
  return { url, kill, start, stop };
}
