/**
 * The `cluster` profile's extra services, beside the default ones: three Kafka nodes (stack/kafka.ts),
 * a Redis primary with one replica watched by three Sentinels (master name `idd`), and a Redis
 * Cluster of three primaries and three replicas. Failure detection is tuned low so that a failover
 * completes in a few seconds. Each group settles after its processes answer: the Kafka nodes until
 * every node's metadata lists all three, the Sentinels until they have a quorum and agree on the
 * primary and its replica's link to it is up, the Redis Cluster (created on its first start) until
 * every node serves all 16384 slots.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { run, which } from "./install.js";
import { KAFKA_NODE_SPECS, kafkaClusterBrokers, kafkaClusterSettled } from "./kafka.js";
import {
  type ClusterServiceName,
  dataDir,
  KAFKA_NODES,
  REDIS_CLUSTER_NODES,
  SENTINEL_GROUP,
  type ServiceName,
  type StackLayout,
} from "./paths.js";
import { redisCall, redisInfo, redisServer } from "./redis.js";
import type { ServiceSpec } from "./service-spec.js";

/** The Sentinels' name for the primary they watch. */
export const SENTINEL_MASTER = "idd";
/** How long a Sentinel waits before it calls a primary down, and a Redis Cluster node a peer. */
export const SENTINEL_DOWN_AFTER_MS = 1500;
export const CLUSTER_NODE_TIMEOUT_MS = 2000;

const redisPrimary = redisServer("redis-primary", (l) => l.ports.redisPrimary, {
  extra: () => ["--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"],
});
const redisReplica = redisServer("redis-replica", (l) => l.ports.redisReplica, {
  extra: (l) => ["--replicaof", "127.0.0.1", String(l.ports.redisPrimary), "--repl-diskless-load", "swapdb"],
});

/** The group's node that acts as primary now (they swap in a failover); redis-primary's port when neither answers. */
async function currentPrimary(l: StackLayout): Promise<number> {
  for (const port of [l.ports.redisPrimary, l.ports.redisReplica]) {
    const info = await redisInfo(port, "replication").catch(() => undefined);
    if (info?.role === "master" && Number(info.connected_slaves) > 0) return port;
  }
  return l.ports.redisPrimary;
}

/**
 * A Sentinel, its configuration written anew at each start (Sentinel rewrites it as it learns):
 * it watches the node that is primary now, and learns the replica and the other Sentinels from it.
 */
function sentinel(n: number): ServiceSpec {
  const name = `sentinel-${n}` as ServiceName;
  const port = (l: StackLayout) => l.ports.sentinels[n - 1] as number;
  return {
    ports: (l) => [port(l)],
    async prepare(l) {
      const dir = dataDir(l, name);
      mkdirSync(dir, { recursive: true });
      const conf = join(dir, "sentinel.conf");
      const primary = await currentPrimary(l);
      writeFileSync(
        conf,
        [
          "bind 127.0.0.1",
          `port ${port(l)}`,
          `dir ${dir}`,
          `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${primary} 2`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER} ${SENTINEL_DOWN_AFTER_MS}`,
          // Also the pause before a failover is tried again (twice this) when Sentinels split their votes.
          `sentinel failover-timeout ${SENTINEL_MASTER} 2500`,
          `sentinel parallel-syncs ${SENTINEL_MASTER} 1`,
          "",
        ].join("\n"),
      );
      return { cmd: which("redis-server") ?? "redis-server", cwd: dir, args: [conf, "--sentinel"] };
    },
    ready: async (l) => (await redisCall(port(l), "PING").catch(() => undefined)) === "PONG",
  };
}

/** A Redis Cluster node; its cluster state (nodes.conf) is kept in its folder across restarts. */
function clusterNode(n: number): ServiceSpec {
  return redisServer(`redis-cluster-${n}` as ServiceName, (l) => l.ports.redisClusterNodes[n - 1] as number, {
    extra: (l) => [
      "--cluster-enabled",
      "yes",
      "--cluster-config-file",
      "nodes.conf",
      "--cluster-node-timeout",
      String(CLUSTER_NODE_TIMEOUT_MS),
      "--cluster-port",
      String(l.ports.redisClusterBus[n - 1]),
    ],
  });
}

export const CLUSTER_SPECS: Record<ClusterServiceName, ServiceSpec> = {
  ...KAFKA_NODE_SPECS,
  "redis-primary": redisPrimary,
  "redis-replica": redisReplica,
  "sentinel-1": sentinel(1),
  "sentinel-2": sentinel(2),
  "sentinel-3": sentinel(3),
  ...(Object.fromEntries(REDIS_CLUSTER_NODES.map((s, i) => [s, clusterNode(i + 1)])) as Record<
    (typeof REDIS_CLUSTER_NODES)[number],
    ServiceSpec
  >),
};

/** Where the Sentinels say the primary is now. */
export async function sentinelMasterPort(l: StackLayout): Promise<number | undefined> {
  for (const port of l.ports.sentinels) {
    const addr = (await redisCall(port, "SENTINEL", "get-master-addr-by-name", SENTINEL_MASTER).catch(() => null)) as string[] | null;
    if (addr) return Number(addr[1]);
  }
  return undefined;
}

/**
 * Every Sentinel has a quorum, sees the others and the replica, and names the same primary; that
 * node acts as primary and the other replicates from it with its link up. Sentinel keeps listing
 * a replica that is down or still syncing, so its count alone would settle a group whose failover
 * (or whose restarted node, which starts as a primary of its own) has not finished yet.
 */
async function sentinelsSettled(l: StackLayout): Promise<boolean> {
  try {
    const named = new Set<number | undefined>();
    for (const port of l.ports.sentinels) {
      await redisCall(port, "SENTINEL", "ckquorum", SENTINEL_MASTER); // throws without a quorum of Sentinels that see each other
      const fields = (await redisCall(port, "SENTINEL", "master", SENTINEL_MASTER)) as string[];
      const m = Object.fromEntries(fields.flatMap((v, i) => (i % 2 === 0 ? [[v, fields[i + 1]]] : [])));
      if (Number(m["num-slaves"]) < 1 || Number(m["num-other-sentinels"]) < 2 || String(m.flags) !== "master") return false;
      named.add(Number(m.port));
    }
    const [primary] = [...named];
    if (named.size !== 1 || primary === undefined) return false;
    const replica = primary === l.ports.redisPrimary ? l.ports.redisReplica : l.ports.redisPrimary;
    const [p, r] = await Promise.all([redisInfo(primary, "replication"), redisInfo(replica, "replication")]);
    return (
      p.role === "master" &&
      Number(p.connected_slaves) >= 1 &&
      r.role === "slave" &&
      Number(r.master_port) === primary &&
      r.master_link_status === "up"
    );
  } catch {
    return false;
  }
}

/** Every node of the Redis Cluster says the cluster is ok, knows all six, and all slots are served. */
export async function redisClusterSettled(l: StackLayout): Promise<boolean> {
  try {
    for (const port of l.ports.redisClusterNodes) {
      const info = await clusterInfo(port);
      if (info.cluster_state !== "ok" || info.cluster_known_nodes !== "6" || info.cluster_slots_ok !== "16384") return false;
    }
    return true;
  } catch {
    return false;
  }
}

export async function clusterInfo(port: number): Promise<Record<string, string>> {
  const text = String(await redisCall(port, "CLUSTER", "INFO"));
  return Object.fromEntries(text.split("\r\n").flatMap((line) => (line.includes(":") ? [line.split(":", 2) as [string, string]] : [])));
}

/** A Redis Cluster whose six nodes are all new (no peers, no slots) is created: 3 primaries, 1 replica each. */
async function createRedisCluster(l: StackLayout, log: string): Promise<void> {
  const infos = await Promise.all(l.ports.redisClusterNodes.map(clusterInfo));
  if (!infos.every((i) => i.cluster_known_nodes === "1" && i.cluster_slots_assigned === "0")) return;
  const nodes = l.ports.redisClusterNodes.map((p) => `127.0.0.1:${p}`);
  await run(
    "redis-cli --cluster create",
    which("redis-cli") ?? "redis-cli",
    ["--cluster", "create", ...nodes, "--cluster-replicas", "1", "--cluster-yes"],
    {
      log,
    },
  );
}

export interface ServiceGroup {
  name: string;
  members: readonly ServiceName[];
  /** Runs once all members answer (creating what only the group as a whole can). */
  settle?(l: StackLayout, log: string): Promise<void>;
  /** True once the group as a whole works. */
  settled(l: StackLayout): Promise<boolean>;
}

export const GROUPS: readonly ServiceGroup[] = [
  { name: "kafka cluster", members: KAFKA_NODES, settled: kafkaClusterSettled },
  { name: "sentinel group", members: SENTINEL_GROUP, settled: sentinelsSettled },
  { name: "redis cluster", members: REDIS_CLUSTER_NODES, settle: createRedisCluster, settled: redisClusterSettled },
];

/** The cluster profile's endpoints under idd's variable names, for `cluster.env`. */
export function clusterEnv(l: StackLayout): Record<string, string> {
  const hosts = (ports: readonly number[]) => ports.map((p) => `127.0.0.1:${p}`).join(",");
  return {
    KAFKA_BROKERS: kafkaClusterBrokers(l).join(","),
    REDIS_SENTINELS: hosts(l.ports.sentinels),
    REDIS_SENTINEL_MASTER: SENTINEL_MASTER,
    REDIS_CLUSTER_NODES: hosts(l.ports.redisClusterNodes),
  };
}
