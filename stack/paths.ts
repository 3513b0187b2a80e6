/** Where the local stack keeps things, and which loopback ports it uses. */
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { PACKAGE_ROOT } from "../src/core/package-root.js";

/** The checkout (found from this file, both in stack/ and in dist/stack/). */
export const REPO_ROOT = PACKAGE_ROOT;

/** The default profile's services: one process each. */
export type DefaultServiceName = "redis" | "redis-auth" | "kafka" | "mongodb" | "mongodb-auth" | "registry";
export const SERVICE_NAMES: readonly ServiceName[] = ["redis", "redis-auth", "kafka", "mongodb", "mongodb-auth", "registry"];

/**
 * The `cluster` profile's extra services (stack/cluster.ts), one process each: three Kafka brokers
 * (KRaft, each broker and controller, a 3-voter quorum), a Redis primary with one replica watched by
 * three Sentinels, and a Redis Cluster of three primaries and three replicas.
 */
export const KAFKA_NODES = ["kafka-1", "kafka-2", "kafka-3"] as const;
export const SENTINEL_GROUP = ["redis-primary", "redis-replica", "sentinel-1", "sentinel-2", "sentinel-3"] as const;
export const REDIS_CLUSTER_NODES = [
  "redis-cluster-1",
  "redis-cluster-2",
  "redis-cluster-3",
  "redis-cluster-4",
  "redis-cluster-5",
  "redis-cluster-6",
] as const;
export type ClusterServiceName = (typeof KAFKA_NODES)[number] | (typeof SENTINEL_GROUP)[number] | (typeof REDIS_CLUSTER_NODES)[number];
export const CLUSTER_SERVICE_NAMES: readonly ClusterServiceName[] = [...KAFKA_NODES, ...SENTINEL_GROUP, ...REDIS_CLUSTER_NODES];

export type ServiceName = DefaultServiceName | ClusterServiceName;
/** Every service the stack knows, the ones `down` stops when none is named. */
export const ALL_SERVICE_NAMES: readonly ServiceName[] = [...SERVICE_NAMES, ...CLUSTER_SERVICE_NAMES];

/** `up --profile NAME`: the default profile, or the default profile and the cluster's extra services. */
export const PROFILES = { default: SERVICE_NAMES, cluster: ALL_SERVICE_NAMES } as const satisfies Record<string, readonly ServiceName[]>;
export type ProfileName = keyof typeof PROFILES;

/**
 * The Kafka lines the stack can run (`IDD_STACK_KAFKA` or `up --kafka`): 4.x by default, 3.9 for
 * the tests that should also see the line before KIP-896 removed old protocol versions.
 */
export const KAFKA_LINES = { "4.4": "4.4.0", "3.9": "3.9.2" } as const;
export const DEFAULT_KAFKA_LINE = "4.4";

/** Versions installed by the stack (Kafka's is the default line's; the layout carries the chosen one). */
export const VERSIONS = {
  kafka: KAFKA_LINES[DEFAULT_KAFKA_LINE],
  ferretdb: "1.24.2",
  apicurio: "3.0.9",
} as const;

/**
 * The container images of the services, for docker-compose.yml and testcontainers
 * (test/support/containers.ts): Kafka and Apicurio at the stack's versions, Redis and MongoDB at
 * their current lines (the stack runs Debian's redis-server and FerretDB instead). test/compose.test.ts
 * checks docker-compose.yml against this list.
 */
export const IMAGES = {
  kafka: `apache/kafka:${VERSIONS.kafka}`,
  redis: "redis:8.10",
  mongodb: "mongo:8.2",
  registry: `apicurio/apicurio-registry:${VERSIONS.apicurio}`,
} as const;

/** A Kafka version from a line ("3.9", "4") or a full version the stack knows ("3.9.2"). */
export function kafkaVersion(spec: string | undefined): string {
  if (!spec) return VERSIONS.kafka;
  const versions = Object.values(KAFKA_LINES) as string[];
  const found = versions.find((v) => v === spec || v.startsWith(`${spec}.`));
  if (!found)
    throw new Error(`IDD_STACK_KAFKA must be one of ${Object.keys(KAFKA_LINES).join(", ")} (or ${versions.join(", ")}), got "${spec}"`);
  return found;
}

export interface StackLayout {
  /** Data, logs, pid files and the env file of one stack (default `<repo>/.stack`). */
  dir: string;
  /** Installed services, shared by every checkout on the machine (default `~/.cache/idd`). */
  cacheDir: string;
  /** The Kafka version every broker of this stack runs (`IDD_STACK_KAFKA`, default the 4.x line). */
  kafkaVersion: string;
  ports: Record<Exclude<DefaultServiceName, "redis-auth" | "mongodb-auth">, number> & {
    redisAuth: number;
    mongodbAuth: number;
    registryTls: number;
    kafkaController: number;
    kafkaSasl: number;
    /** The cluster profile: brokers 1–3, their controllers, the Sentinel group, the Redis Cluster. */
    kafkaNodes: readonly number[];
    kafkaNodeControllers: readonly number[];
    redisPrimary: number;
    redisReplica: number;
    sentinels: readonly number[];
    redisClusterNodes: readonly number[];
    redisClusterBus: readonly number[];
  };
  readyTimeoutMs: number;
}

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

/** A port base from the environment: an integer between 1024 and 65000. */
function portBase(env: NodeJS.ProcessEnv, name: "IDD_STACK_PORT_BASE" | "IDD_CLUSTER_PORT_BASE", fallback: number): number {
  const base = Number(env[name] ?? fallback);
  if (!Number.isInteger(base) || base < 1024 || base > 65000)
    throw new Error(`${name} must be an integer between 1024 and 65000, got "${env[name]}"`);
  return base;
}

/**
 * Ports sit on a base far from every default (6379, 9092, 27017, 8081): base + 379, 92, 93, 17, 81;
 * the secured endpoints (stack/secrets.ts) on base + 380 (Redis with a password) and 94 (Kafka SASL).
 * `IDD_STACK_PORT_BASE` (default 29000) moves them all, e.g. to run a second stack beside the first.
 * The cluster profile has a base of its own, `IDD_CLUSTER_PORT_BASE` (default 32000), whichever
 * stack starts it (`npm run stack -- up --profile cluster` or the tests, test/support/cluster-stack.ts):
 * cluster base + 101–103 (Kafka brokers; controllers 111–113), 400 and 401 (Redis primary and
 * replica), 411–413 (Sentinels), 421–426 (Redis Cluster nodes; cluster bus 431–436).
 */
export function layoutFromEnv(env: NodeJS.ProcessEnv = process.env): StackLayout {
  const base = portBase(env, "IDD_STACK_PORT_BASE", 29000);
  const cluster = portBase(env, "IDD_CLUSTER_PORT_BASE", 32000);
  const timeoutS = Number(env.IDD_STACK_READY_TIMEOUT_S ?? 180);
  if (!Number.isFinite(timeoutS) || timeoutS < 0) {
    throw new Error(`IDD_STACK_READY_TIMEOUT_S must be a number of seconds ≥ 0, got "${env.IDD_STACK_READY_TIMEOUT_S}"`);
  }
  const cacheHome = env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return {
    dir: resolve(env.IDD_STACK_DIR ?? join(REPO_ROOT, ".stack")),
    cacheDir: resolve(env.IDD_CACHE_DIR ?? join(cacheHome, "idd")),
    kafkaVersion: kafkaVersion(env.IDD_STACK_KAFKA),
    ports: {
      redis: base + 379,
      redisAuth: base + 380,
      kafka: base + 92,
      kafkaController: base + 93,
      kafkaSasl: base + 94,
      mongodb: base + 17,
      mongodbAuth: base + 18,
      registry: base + 81,
      registryTls: base + 82,
      kafkaNodes: range(cluster + 101, 3),
      kafkaNodeControllers: range(cluster + 111, 3),
      redisPrimary: cluster + 400,
      redisReplica: cluster + 401,
      sentinels: range(cluster + 411, 3),
      redisClusterNodes: range(cluster + 421, 6),
      redisClusterBus: range(cluster + 431, 6),
    },
    readyTimeoutMs: timeoutS * 1000,
  };
}

export const logFile = (l: StackLayout, name: ServiceName) => join(l.dir, "logs", `${name}.log`);
export const pidFile = (l: StackLayout, name: ServiceName) => join(l.dir, "run", `${name}.pid`);
export const dataDir = (l: StackLayout, name: ServiceName) => join(l.dir, "data", name);
export const envFile = (l: StackLayout) => join(l.dir, "env");
/** The cluster profile's endpoints, under idd's variable names (stack/cluster.ts). */
export const clusterEnvFile = (l: StackLayout) => join(l.dir, "cluster.env");
