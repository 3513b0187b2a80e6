/**
 * The fault kinds and the schedules of `npm run chaos` (short: CI, full: issue #4's numbers,
 * cluster: the cluster profile's 3 brokers, Sentinel and Redis Cluster, issue #19).
 */
import type { Host } from "../../stack/netfaults.js";
import type { HostileSettings } from "./phases/hostile.js";
import type { OverloadSettings } from "./phases/overload.js";

export type FaultKind =
  | "kill"
  | "pause"
  | "redis-pause"
  | "redis-restart"
  | "redis-flushall"
  | "mongodb-outage"
  | "kafka-restart"
  | "scale"
  | "overload"
  | "hostile"
  | "kafka-leader"
  | "sentinel-failover"
  | "redis-cluster"
  | "cluster-failover"
  | "split-brain"
  | "redis-cut"
  | "mongodb-cut"
  | "kafka-cut"
  | "redis-latency"
  | "kafka-latency"
  | "clock-skew"
  | "broker-cut"
  | "coordinator-cut"
  | "broker-isolated"
  | "clock-start";
export const FAULT_KINDS: readonly FaultKind[] = [
  "kill",
  "pause",
  "redis-pause",
  "redis-restart",
  "redis-flushall",
  "mongodb-outage",
  "kafka-restart",
  "scale",
  "overload",
  "hostile",
  "kafka-leader",
  "sentinel-failover",
  "redis-cluster",
  "cluster-failover",
  "split-brain",
  "redis-cut",
  "mongodb-cut",
  "kafka-cut",
  "redis-latency",
  "kafka-latency",
  "clock-skew",
  "broker-cut",
  "coordinator-cut",
  "broker-isolated",
  "clock-start",
];
/** Faults after which the workers' Redis may have lost state (restored counters explain headroom gaps, G4). */
export const REDIS_LOSSES: ReadonlySet<FaultKind> = new Set([
  "redis-restart",
  "redis-flushall",
  "sentinel-failover",
  "redis-cluster",
  "cluster-failover",
  "split-brain",
]);
export type ProfileName = "short" | "full" | "cluster" | "network" | "network-short" | "broker-cut";

/** The network profile's one-worker faults (phases/link-faults.ts, phases/clock-skew.ts). */
export interface LinkFaultSettings {
  /** How long one worker is cut from Redis, from MongoDB, from Kafka (silent links: no RST). */
  cutMs: number;
  /** Latency on one worker's Redis link, then on its Kafka link: round trip ms ± jitter, for `ms`. */
  latency: { roundTripMs: number; jitterMs: number; ms: number };
  /** One worker's wall clock stepped to each offset in turn, held `ms` each, then back to real time. */
  clock: { offsets: string[]; ms: number };
}

export interface Profile {
  /**
   * Where the run's services are: `private`, a single-node stack of the run's own (`.stack-chaos`);
   * `cluster`, the cluster profile's services (3 Kafka brokers, Sentinel, Redis Cluster; workers start
   * on Sentinel, and `redis-cluster` moves them to the Redis Cluster).
   */
  services: "private" | "cluster" | "network";
  /** The network profile: how long the split brain's partition lasts, and when ownership moves in it. */
  partitionMs?: number;
  moveAfterMs?: number;
  /** The network profile: how long side A's workers are cut from Kafka in the split (zombies); 0 or absent: not. */
  zombieMs?: number;
  /** The network profile on three brokers: Kafka node i runs as host i (the broker cuts); absent: one broker, as root. */
  kafkaHosts?: Host[];
  /** How long a broker cut (phases/broker-cut.ts) lasts. */
  brokerCutMs?: number;
  /** The network profile: workers started with a wrong clock (phases/clock-start.ts), one per offset, each serving `ms`. */
  startClocks?: { offsets: string[]; ms: number };
  /** The network profile: the one-worker link and clock faults. */
  links?: LinkFaultSettings;
  /** For the cluster profile's faults: how long the load writes to a primary whose replica is frozen. */
  lagMs?: number;
  /** Load before the first fault. */
  warmupMs: number;
  /** Load between a phase's recovery and the next fault. */
  calmMs: number;
  /** Load after the last phase, before the load stops. */
  cooldownMs: number;
  /** How long every sequence may take to answer again after a fault is healed. */
  recoverTimeoutMs: number;
  /** SIGSTOP duration: longer than the session timeout. */
  pauseMs: number;
  mongodbOutageMs: number;
  /** Redis SIGSTOPped (hangs with its data; connections stay open): longer than the session timeout. */
  redisPauseMs: number;
  /** Time between losing Redis's state and running replay: workers must fail closed meanwhile. */
  redisLostMs: number;
  /** The open-loop burst from a raw kafkajs producer (phases/overload.ts). */
  overload: OverloadSettings;
  /** Hostile requests interleaved with good ones, from a raw kafkajs producer (phases/hostile.ts). */
  hostile: HostileSettings;
  schedule: FaultKind[];
}

/**
 * Issue #28: the split brain with zombies, then faults on one worker's links and clock (a worker of
 * its own host, started after the split): cut from Redis and its Sentinels, from MongoDB, from Kafka
 * (silent links), 200 ± 100 ms on its Redis link, then on its Kafka link, and its clock stepped.
 */
const NETWORK_SCHEDULE: FaultKind[] = [
  "split-brain",
  "redis-cut",
  "mongodb-cut",
  "kafka-cut",
  "redis-latency",
  "kafka-latency",
  "clock-skew",
  "clock-start",
];

const kills = (n: number): FaultKind[] => Array.from({ length: n }, () => "kill");

/** 2,000 hostile requests: the small kinds by the hundred, the large ones (900 KB ids, 300 KB of headers) a few. */
const HOSTILE_MIX: HostileSettings["perKind"] = {
  "reply-topic-invalid": 350,
  "reply-partition-invalid": 350,
  "reply-topic-unknown": 350,
  "correlation-id-huge": 5,
  "headers-huge": 20,
  "bad-json": 350,
  "bad-json-no-reply": 225,
  "zero-count": 350,
};

// For CI: a few of each, about two minutes of faults (the overload and hostile phases about 10 s each).
const SHORT: Profile = {
  services: "private",
  warmupMs: 6000,
  calmMs: 1000,
  cooldownMs: 2000,
  recoverTimeoutMs: 45_000,
  pauseMs: 10_000,
  mongodbOutageMs: 8000,
  redisPauseMs: 8000,
  redisLostMs: 2000,
  overload: { requests: 30_000, chunk: 500, inFlight: 4, drainTimeoutMs: 180_000 },
  hostile: { good: 1000, perKind: HOSTILE_MIX, chunk: 200, inFlight: 4, drainTimeoutMs: 120_000, freshRequests: 50, freshMaxMs: 1000 },
  // Redis losses last: without a working `idd replay` nothing recovers from them, and the run stops there.
  schedule: [
    "kill",
    "overload",
    "pause",
    "kill",
    "scale",
    "mongodb-outage",
    "hostile",
    "redis-pause",
    "kafka-restart",
    "kill",
    "redis-restart",
    "redis-flushall",
  ],
};

/**
 * Issue #28: on the cluster stack's folder and ports, one Kafka broker, MongoDB and the Sentinel
 * group (quorum 2, down-after 1.5 s), the Redis nodes and Sentinels run as the network-fault
 * harness's hosts (stack/netfaults.ts): side A = the primary P and 2 workers, side B = the replica
 * Q, the Sentinels and 2 workers; after the split, a fifth worker on a host of its own (h1) for the
 * link and clock faults.
 */
const NETWORK: Profile = {
  ...SHORT,
  services: "network",
  warmupMs: 5000,
  calmMs: 2000,
  cooldownMs: 5000,
  partitionMs: 40_000,
  moveAfterMs: 10_000,
  zombieMs: 14_000,
  links: {
    cutMs: 20_000,
    latency: { roundTripMs: 200, jitterMs: 100, ms: 30_000 },
    clock: { offsets: ["-2s", "-10s", "+1h"], ms: 15_000 },
  },
  startClocks: { offsets: ["-10s", "+1h"], ms: 15_000 },
  schedule: NETWORK_SCHEDULE,
};

/**
 * Issue #28's broker nemeses: the network profile's services and load on the cluster stack's three
 * Kafka nodes, each as a host of its own (idd-h2, h3, h4), and one node at a time cut while it runs
 * (phases/broker-cut.ts): the busiest request partition's leader from the other nodes, the group
 * coordinator from the other nodes, the leader from everything.
 */
const BROKER_CUT: Profile = {
  ...NETWORK,
  kafkaHosts: ["h2", "h3", "h4"],
  brokerCutMs: 20_000,
  schedule: ["broker-cut", "coordinator-cut", "broker-isolated"],
};

export const PROFILES: Record<ProfileName, Profile> = {
  short: SHORT,
  // Issue #4's numbers: ≥ 20 kills, 1 SIGSTOP/SIGCONT, 3 Redis losses, 2 MongoDB outages, 1 broker restart, scale out/in.
  full: {
    services: "private",
    warmupMs: 5000,
    calmMs: 3000,
    cooldownMs: 5000,
    recoverTimeoutMs: 60_000,
    pauseMs: 10_000,
    mongodbOutageMs: 8000,
    redisPauseMs: 8000,
    redisLostMs: 3000,
    overload: { requests: 50_000, chunk: 500, inFlight: 4, drainTimeoutMs: 300_000 },
    hostile: {
      good: 2000,
      perKind: Object.fromEntries(Object.entries(HOSTILE_MIX).map(([k, n]) => [k, n * 2])) as HostileSettings["perKind"],
      chunk: 200,
      inFlight: 4,
      drainTimeoutMs: 180_000,
      freshRequests: 50,
      freshMaxMs: 1000,
    },
    schedule: [
      ...kills(4),
      "overload",
      "pause",
      "redis-pause",
      ...kills(4),
      "hostile",
      "mongodb-outage",
      ...kills(3),
      "redis-restart",
      "overload",
      ...kills(3),
      "kafka-restart",
      "hostile",
      ...kills(3),
      "redis-flushall",
      "mongodb-outage",
      ...kills(3),
      "redis-restart",
      "scale",
    ],
  },
  /**
   * Issue #19: on the cluster profile's services, under the same load, a killed leader broker of the
   * busiest request partitions (restarted once every sequence answered again), a Sentinel failover to
   * a replica that missed writes, then the pool moved to the Redis Cluster and one of its shard
   * primaries killed. No operator step: the workers restore what Redis lost by themselves.
   */
  cluster: {
    ...SHORT,
    services: "cluster",
    warmupMs: 5000,
    calmMs: 2000,
    lagMs: 3000,
    schedule: ["kafka-leader", "sentinel-failover", "redis-cluster", "cluster-failover"],
  },
  network: NETWORK,
  "broker-cut": BROKER_CUT,
  // The CI version (test/chaos/chaos.test.ts), within its budget (each phase also waits for the
  // group and audits the gapless series: 20-40 s on the two-core machine, and the lone worker's
  // join as much again): the split brain with its zombies (a silent Kafka link), then the two
  // one-worker faults that found bugs (issue #28), the worker cut from Redis and its clock stepped,
  // each held past what it tests (the 2 s Redis timeout) and no longer. The full profile adds the
  // MongoDB and Kafka cuts and the two latencies.
  "network-short": {
    ...NETWORK,
    links: { cutMs: 6000, latency: { roundTripMs: 200, jitterMs: 100, ms: 6000 }, clock: { offsets: ["-2s", "-10s", "+1h"], ms: 4000 } },
    schedule: ["split-brain", "redis-cut", "clock-skew"],
  },
};

/** The profile with the hostile phase's requests multiplied by `scale`. */
export function scaledProfile(base: Profile, scale: number): Profile {
  const perKind = Object.fromEntries(Object.entries(base.hostile.perKind).map(([k, n]) => [k, n * scale]));
  return { ...base, hostile: { ...base.hostile, good: base.hostile.good * scale, perKind: perKind as Profile["hostile"]["perKind"] } };
}
