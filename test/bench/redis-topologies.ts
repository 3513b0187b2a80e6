/**
 * Redis as a standalone server, under Sentinel and as a Redis Cluster for the open loop's
 * idd-standalone, idd-sentinel and idd-cluster targets (the cost of each topology against the
 * standalone one, same Kafka and MongoDB): a standalone Redis and the cluster profile's Redis
 * services (a primary, its replica and 3 Sentinels; 3 primaries and 3 replicas of a Cluster), all
 * of one build and settings, in the profile's folder and ports as the tests use them
 * (IDD_CLUSTER_STACK_DIR, IDD_CLUSTER_PORT_BASE), started when needed and stopped again at the end
 * when the benchmark started them. The standalone one is not the stack's Redis: that one may be
 * busy with other work on a shared machine, which would make the topologies look cheap.
 */
import { pidFile, REDIS_CLUSTER_NODES, SENTINEL_GROUP } from "../../stack/paths.js";
import { runningPid } from "../../stack/proc.js";
import { down, up } from "../../stack/stack.js";
import { clusterLayout } from "../support/cluster-stack.js";

export const TOPOLOGY_TARGETS = ["idd-standalone", "idd-sentinel", "idd-cluster"] as const;
export type TopologyTarget = (typeof TOPOLOGY_TARGETS)[number];

export interface RedisTopologies {
  /** The workers' extra environment per target (REDIS_URL stays for the others: its credentials apply to every node). */
  env: Record<TopologyTarget, NodeJS.ProcessEnv>;
  /** The Redis processes each target's workers use (their CPU counts as the target's Redis). */
  pids: Record<TopologyTarget, number[]>;
  stop(): Promise<void>;
}

export async function redisTopologies(say: (line: string) => void): Promise<RedisTopologies> {
  const layout = clusterLayout();
  const services = ["redis" as const, ...SENTINEL_GROUP, ...REDIS_CLUSTER_NODES];
  const r = await up({ layout, services, progress: (l) => say(`stack (${layout.dir}): ${l}`) });
  const c = r.cluster;
  if (!c?.REDIS_SENTINELS || !c.REDIS_SENTINEL_MASTER || !c.REDIS_CLUSTER_NODES)
    throw new Error(`the cluster profile in ${layout.dir} wrote no Redis endpoints`);
  const pidsOf = (names: readonly string[]) =>
    names.map((s) => runningPid(pidFile(layout, s as (typeof services)[number]), layout.dir)).filter((p): p is number => p !== undefined);
  return {
    env: {
      "idd-standalone": { REDIS_URL: `redis://127.0.0.1:${layout.ports.redis}` },
      "idd-sentinel": { REDIS_SENTINELS: c.REDIS_SENTINELS, REDIS_SENTINEL_MASTER: c.REDIS_SENTINEL_MASTER },
      "idd-cluster": { REDIS_CLUSTER_NODES: c.REDIS_CLUSTER_NODES },
    },
    pids: { "idd-standalone": pidsOf(["redis"]), "idd-sentinel": pidsOf(SENTINEL_GROUP), "idd-cluster": pidsOf(REDIS_CLUSTER_NODES) },
    stop: async () => {
      if (r.started.length > 0) await down({ layout, services: r.started });
    },
  };
}
