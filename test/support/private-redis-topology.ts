/**
 * Redis topologies of a test's own, from plain redis-server processes on free ports (no persistence):
 * a Redis Cluster of three primaries without replicas, and a primary with one replica whose failover
 * the test drives by hand (cut the replica off, write more on the primary, kill the primary: what
 * the primary took after the cut is lost, as in a failover to a replica that lagged).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { which } from "../../stack/install.js";
import { freePort } from "./private-redis.js";

interface Server {
  port: number;
  proc: ChildProcess;
  dir: string;
}

function bin(name: string): string {
  const b = which(name);
  if (!b) throw new Error(`${name} is not installed: run \`npm run stack -- up redis\` once`);
  return b;
}

async function launch(extra: string[] = []): Promise<Server> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "idd-redis-topo-"));
  const proc = spawn(
    bin("redis-server"),
    ["--bind", "127.0.0.1", "--port", String(port), "--dir", dir, "--save", "", "--appendonly", "no", ...extra],
    {
      stdio: "ignore",
    },
  );
  const probe = new Redis(port, "127.0.0.1", { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on("error", () => {});
  for (let i = 0; ; i++) {
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      return { port, proc, dir };
    } catch {
      if (i > 100) throw new Error(`redis-server on ${port} did not start`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

async function kill(s: Server): Promise<void> {
  if (s.proc.exitCode !== null || s.proc.signalCode !== null) return;
  const exited = new Promise((r) => s.proc.once("exit", r));
  s.proc.kill("SIGCONT");
  s.proc.kill("SIGKILL");
  await exited;
}

/** Kills the server and removes its folder. */
async function remove(s: Server): Promise<void> {
  await kill(s);
  rmSync(s.dir, { recursive: true, force: true });
}

export interface PrivateCluster {
  nodes: { host: string; port: number }[];
  stop(): Promise<void>;
}

/** Three primaries sharing the 16384 slots (redis-cli --cluster create), ready when every node sees the cluster ok. */
export async function startPrivateCluster(): Promise<PrivateCluster> {
  const servers = await Promise.all(
    [0, 1, 2].map(() => launch(["--cluster-enabled", "yes", "--cluster-config-file", `nodes-${Math.random()}.conf`])),
  );
  const addrs = servers.map((s) => `127.0.0.1:${s.port}`);
  execFileSync(bin("redis-cli"), ["--cluster", "create", ...addrs, "--cluster-replicas", "0", "--cluster-yes"], { stdio: "ignore" });
  for (const s of servers) {
    const c = new Redis(s.port, "127.0.0.1");
    for (let i = 0; !/cluster_state:ok/.test(await c.cluster("INFO")); i++) {
      if (i > 200) throw new Error("the private cluster did not become ready");
      await new Promise((r) => setTimeout(r, 50));
    }
    c.disconnect();
  }
  return {
    nodes: servers.map((s) => ({ host: "127.0.0.1", port: s.port })),
    stop: async () => void (await Promise.all(servers.map(remove))),
  };
}

export interface PrivateReplicated {
  primaryUrl: string;
  replicaUrl: string;
  /**
   * Cuts the replica off: it receives nothing more from the primary. (Promoted now, REPLICAOF NO ONE:
   * a stopped replica would still read what the kernel buffered for it once resumed.)
   */
  cutReplica(): Promise<void>;
  /** Kills the primary: clients move to the replica, which lacks everything written since the cut. */
  failover(): Promise<void>;
  stop(): Promise<void>;
}

/** A primary with one replica, in sync when this resolves. */
export async function startPrivateReplicated(): Promise<PrivateReplicated> {
  const primary = await launch();
  const replica = await launch(["--replicaof", "127.0.0.1", String(primary.port)]);
  const r = new Redis(replica.port, "127.0.0.1");
  for (let i = 0; !/master_link_status:up/.test(await r.info("replication")); i++) {
    if (i > 200) throw new Error("the replica did not sync");
    await new Promise((res) => setTimeout(res, 50));
  }
  r.disconnect();
  return {
    primaryUrl: `redis://127.0.0.1:${primary.port}`,
    replicaUrl: `redis://127.0.0.1:${replica.port}`,
    cutReplica: async () => {
      const c = new Redis(replica.port, "127.0.0.1");
      await c.replicaof("NO", "ONE");
      c.disconnect();
    },
    failover: () => kill(primary),
    stop: async () => {
      await remove(primary);
      await remove(replica);
    },
  };
}
