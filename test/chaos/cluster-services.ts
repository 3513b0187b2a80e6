/**
 * The cluster profile's services for a chaos run (profiles.ts: `cluster`): 3 Kafka brokers, the
 * Sentinel group and the Redis Cluster of stack/cluster.ts, with MongoDB and the registry from
 * elsewhere. test/chaos/cluster.test.ts hands in those `withCluster` shares with the other cluster
 * tests of a run; `npm run chaos -- --profile cluster` starts them itself, in the cluster stack's
 * folder (IDD_CLUSTER_STACK_DIR / IDD_CLUSTER_PORT_BASE, or --stack-dir / --port-base), with a
 * MongoDB and a registry there too, and stops what it started.
 */
import { join } from "node:path";
import type { Progress } from "../../stack/install.js";
import { CLUSTER_SERVICE_NAMES, type StackLayout } from "../../stack/paths.js";
import { down, up } from "../../stack/stack.js";
import { clusterLayout } from "../support/cluster-stack.js";

export interface ChaosCluster {
  layout: StackLayout;
  /** cluster.env: KAFKA_BROKERS (3), REDIS_SENTINELS, REDIS_SENTINEL_MASTER, REDIS_CLUSTER_NODES. */
  env: Record<string, string>;
  mongodbUrl: string;
  schemaRegistryUrl: string;
}

/** Where the run's own files go (worker logs, its lock): a folder inside the cluster's. */
export const chaosDir = (l: StackLayout) => join(l.dir, "chaos");

/** The cluster stack's layout: IDD_CLUSTER_STACK_DIR / IDD_CLUSTER_PORT_BASE, or the run's --stack-dir / --port-base. */
export const chaosClusterLayout = (opts: { stackDir?: string | undefined; portBase?: number | undefined }) =>
  clusterLayout({
    ...process.env,
    ...(opts.stackDir !== undefined && { IDD_CLUSTER_STACK_DIR: opts.stackDir }),
    ...(opts.portBase !== undefined && { IDD_CLUSTER_PORT_BASE: String(opts.portBase) }),
  });

export async function startCluster(layout: StackLayout, progress: Progress): Promise<{ cluster: ChaosCluster; stop: () => Promise<void> }> {
  const r = await up({ layout, services: [...CLUSTER_SERVICE_NAMES, "mongodb", "registry"], progress });
  if (!r.cluster) throw new Error(`the cluster profile in ${layout.dir} wrote no endpoints`);
  return {
    cluster: { layout, env: r.cluster, mongodbUrl: r.env.MONGODB_URL, schemaRegistryUrl: r.env.SCHEMA_REGISTRY_URL },
    stop: async () => {
      await down({ layout, services: r.started, progress });
    },
  };
}
