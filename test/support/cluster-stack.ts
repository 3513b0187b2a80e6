/**
 * The cluster profile's services (stack/cluster.ts) for the tests that need them: three Kafka
 * brokers, a Sentinel group, a Redis Cluster. They run in a stack folder of their own
 * (`IDD_CLUSTER_STACK_DIR`, default <repo>/.stack-cluster; ports on `IDD_CLUSTER_PORT_BASE`, default
 * 32000), beside whatever serves the rest of the suite, and are started by the first test that asks
 * (so a run without such a test pays nothing); the global setup stops them at the end of a run that
 * started them. Tests that use them run one at a time across files (`withCluster`), since some kill
 * and restart their processes.
 */
import { join } from "node:path";
import { CLUSTER_SERVICE_NAMES, layoutFromEnv, pidFile, REPO_ROOT, type StackLayout } from "../../stack/paths.js";
import { runningPid, withFileLock } from "../../stack/proc.js";
import { up } from "../../stack/stack.js";

export function clusterLayout(env: NodeJS.ProcessEnv = process.env): StackLayout {
  return layoutFromEnv({
    ...env,
    IDD_STACK_DIR: env.IDD_CLUSTER_STACK_DIR ?? join(REPO_ROOT, ".stack-cluster"),
    // The cluster's ports follow IDD_CLUSTER_PORT_BASE (stack/paths.ts), as in `npm run stack`;
    // the default profile's, unused here, sit on the same base, clear of the cluster's.
    IDD_STACK_PORT_BASE: env.IDD_CLUSTER_PORT_BASE ?? "32000",
  });
}

/** True when a service of the cluster profile runs in `l` (the global setup's note of what it found). */
export const clusterRuns = (l: StackLayout) => CLUSTER_SERVICE_NAMES.some((s) => runningPid(pidFile(l, s), l.dir) !== undefined);

export interface ClusterStack {
  layout: StackLayout;
  /** cluster.env: KAFKA_BROKERS (3), REDIS_SENTINELS, REDIS_SENTINEL_MASTER, REDIS_CLUSTER_NODES. */
  env: Record<string, string>;
  kafkaBrokers: string[];
}

/**
 * Runs `fn` with every cluster service up and settled (started when needed; a service an earlier
 * test killed is started again), and no other test of the run using the cluster meanwhile.
 */
export function withCluster<T>(fn: (c: ClusterStack) => Promise<T>): Promise<T> {
  const layout = clusterLayout();
  return withFileLock(join(layout.dir, "tests.lock"), async () => {
    const r = await up({ layout, services: CLUSTER_SERVICE_NAMES });
    const env = r.cluster;
    if (!env) throw new Error(`the cluster profile in ${layout.dir} wrote no endpoints`);
    return fn({ layout, env, kafkaBrokers: (env.KAFKA_BROKERS ?? "").split(",") });
  });
}

/** Test timeout for a test that may start the cluster first (three JVMs on two busy cores). */
export const CLUSTER_TEST_TIMEOUT_MS = 300_000;
