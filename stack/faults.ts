/**
 * Faults on the cluster profile's services (stack/cluster.ts), for tests that want them (test/chaos
 * and the integration tests): kill a Kafka node or a partition's leader, fail the Sentinel group
 * over to a replica that missed writes, kill a Redis Cluster shard's primary. Each waits until the
 * fault has taken effect; `restart` brings a killed service back (and waits until its group has
 * settled again). Only processes the stack started in `l` are signalled (their pid files).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { SENTINEL_MASTER, sentinelMasterPort } from "./cluster.js";
import { kafkaClusterBrokers } from "./kafka.js";
import { ServedAdmin } from "./kafka-admin.js";
import { KAFKA_NODES, pidFile, REDIS_CLUSTER_NODES, type ServiceName, type StackLayout } from "./paths.js";
import { isAlive, runningPid } from "./proc.js";
import { redisCall, redisInfo } from "./redis.js";
import { up } from "./stack.js";

const FAULT_TIMEOUT_MS = 60_000;

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = FAULT_TIMEOUT_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs / 1000} s`);
    await sleep(200);
  }
}

function pidOf(l: StackLayout, s: ServiceName): number {
  const pid = runningPid(pidFile(l, s), l.dir);
  if (pid === undefined) throw new Error(`${s} is not running in ${l.dir}`);
  return pid;
}

/** Signals a service of the stack (SIGKILL by default) and waits until it is gone. */
export async function kill(l: StackLayout, s: ServiceName, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
  const pid = pidOf(l, s);
  process.kill(pid, signal);
  await until(`${s} (pid ${pid}) gone after ${signal}`, async () => (isAlive(pid) ? undefined : true));
  runningPid(pidFile(l, s), l.dir); // removes the stale pid file
}

/** Starts a killed service again and waits until it answers and its group has settled (stack `up`). */
export async function restart(l: StackLayout, s: ServiceName): Promise<void> {
  await up({ layout: l, services: [s] });
}

/** The node name of Kafka broker `id` (1–3). */
export const kafkaNode = (id: number): ServiceName => {
  const name = KAFKA_NODES[id - 1];
  if (!name) throw new Error(`no Kafka node ${id} (the cluster has ${KAFKA_NODES.length})`);
  return name;
};

async function withAdmin<T>(l: StackLayout, fn: (admin: ServedAdmin) => Promise<T>): Promise<T> {
  const admin = new ServedAdmin(kafkaClusterBrokers(l), "idd-stack-faults");
  try {
    return await fn(admin);
  } finally {
    await admin.close().catch(() => {});
  }
}

/**
 * The broker id (1–3) leading `topic`'s `partition`; undefined while it has none. Asked once every
 * live broker serves the topic (a few seconds at most: the caller asks again).
 */
export async function partitionLeader(l: StackLayout, topic: string, partition: number): Promise<number | undefined> {
  return withAdmin(l, async (admin) => {
    const [meta] = await admin.topicMetadata([topic], 3000);
    const leader = meta?.partitions.find((p) => p.partitionId === partition)?.leader;
    return leader === undefined || leader < 0 ? undefined : leader;
  });
}

/** The broker ids the cluster's metadata lists now. */
export async function kafkaBrokers(l: StackLayout): Promise<number[]> {
  return withAdmin(l, async (admin) => (await admin.cluster()).brokers);
}

/** Kills Kafka node `id` and waits until the cluster's metadata no longer lists it (its partitions have moved). */
export async function killKafkaNode(l: StackLayout, id: number, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
  await kill(l, kafkaNode(id), signal);
  await until(`broker ${id} out of the metadata`, async () => ((await kafkaBrokers(l)).includes(id) ? undefined : true));
}

/**
 * Kills the leader of `topic`'s `partition` and waits until another replica leads it (the topic
 * needs more than one copy). Returns the killed broker's id and the new leader's.
 */
export async function killPartitionLeader(
  l: StackLayout,
  topic: string,
  partition: number,
  signal: NodeJS.Signals = "SIGKILL",
): Promise<{ killed: number; leader: number }> {
  const killed = await until(`a leader for ${topic}-${partition}`, () => partitionLeader(l, topic, partition));
  await kill(l, kafkaNode(killed), signal);
  const leader = await until(`a new leader for ${topic}-${partition}`, async () => {
    const now = await partitionLeader(l, topic, partition);
    return now !== undefined && now !== killed ? now : undefined;
  });
  return { killed, leader };
}

/** The Sentinel group's service running on `port` (primary and replica swap roles in a failover). */
function sentinelGroupNode(l: StackLayout, port: number): "redis-primary" | "redis-replica" {
  if (port === l.ports.redisPrimary) return "redis-primary";
  if (port === l.ports.redisReplica) return "redis-replica";
  throw new Error(`the Sentinels name 127.0.0.1:${port}, which is not a node of this stack`);
}

/**
 * The primary the Sentinels name now, and the replica (the group's other node).
 */
export async function sentinelRoles(l: StackLayout): Promise<{ primary: number; replica: number }> {
  const primary = await until("the Sentinels to name a primary", () => sentinelMasterPort(l));
  sentinelGroupNode(l, primary);
  return { primary, replica: primary === l.ports.redisPrimary ? l.ports.redisReplica : l.ports.redisPrimary };
}

/**
 * A failover that loses writes: the replica is frozen (SIGSTOP) and its replication link cut, so
 * whatever `writes` does on the primary (given its port) reaches the primary only; then the primary
 * is killed, the replica thawed, and the Sentinels promote it without those writes. Resolves once
 * the Sentinels name the replica and it says it is a primary. The killed node stays down:
 * `restart(l, killed)` brings it back, and the Sentinels make it a replica of the new primary.
 */
export async function failoverLosingWrites(
  l: StackLayout,
  writes: (primaryPort: number) => Promise<void>,
): Promise<{ killed: ServiceName; oldPrimary: number; newPrimary: number }> {
  const { primary, replica } = await sentinelRoles(l);
  await until("the replica in sync", async () =>
    (await redisInfo(replica, "replication")).master_link_status === "up" ? true : undefined,
  );
  const killed = sentinelGroupNode(l, primary);
  const replicaPid = pidOf(l, sentinelGroupNode(l, replica));
  process.kill(replicaPid, "SIGSTOP");
  try {
    // The primary drops the frozen replica's link: nothing written from now on reaches it.
    await redisCall(primary, "CLIENT", "KILL", "TYPE", "replica");
    await writes(primary);
    await kill(l, killed);
  } finally {
    process.kill(replicaPid, "SIGCONT");
  }
  await until("every Sentinel to name the promoted replica", async () => {
    const named = await Promise.all(l.ports.sentinels.map((p) => redisCall(p, "SENTINEL", "get-master-addr-by-name", SENTINEL_MASTER)));
    return named.every((a) => Number((a as string[] | null)?.[1]) === replica) ? true : undefined;
  });
  await until("the promoted replica to act as primary", async () =>
    (await redisInfo(replica, "replication")).role === "master" ? true : undefined,
  );
  return { killed, oldPrimary: primary, newPrimary: replica };
}

/** Which Redis Cluster node (its port) serves `slot`, as a live node sees it. */
export async function clusterSlotOwner(l: StackLayout, slot: number): Promise<number | undefined> {
  for (const port of l.ports.redisClusterNodes) {
    const ranges = (await redisCall(port, "CLUSTER", "SLOTS").catch(() => undefined)) as [number, number, [string, number]][] | undefined;
    const r = ranges?.find(([from, to]) => from <= slot && slot <= to);
    if (r) return Number(r[2][1]);
  }
  return undefined;
}

/**
 * Kills the Redis Cluster primary that serves `slot` (slot 0 by default) and waits until its
 * replica serves it and the cluster says ok again. The killed node stays down: `restart(l, killed)`
 * brings it back as a replica.
 */
export async function killClusterPrimary(l: StackLayout, slot = 0): Promise<{ killed: ServiceName; oldPort: number; newPort: number }> {
  const oldPort = await until(`an owner of slot ${slot}`, () => clusterSlotOwner(l, slot));
  const killed = REDIS_CLUSTER_NODES[l.ports.redisClusterNodes.indexOf(oldPort)];
  if (!killed) throw new Error(`slot ${slot} is served by 127.0.0.1:${oldPort}, not a node of this stack`);
  await kill(l, killed);
  const survivors = l.ports.redisClusterNodes.filter((p) => p !== oldPort);
  const newPort = await until(`a replica to take slot ${slot} over`, async () => {
    const owner = await clusterSlotOwner(l, slot);
    if (owner === undefined || owner === oldPort) return undefined;
    const ok = await Promise.all(survivors.map(async (p) => String(await redisCall(p, "CLUSTER", "INFO")).includes("cluster_state:ok")));
    return ok.every(Boolean) ? owner : undefined;
  });
  return { killed, oldPort, newPort };
}
