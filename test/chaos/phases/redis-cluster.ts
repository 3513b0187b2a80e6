/**
 * `redis-cluster`: the pool moves from the Sentinel group to the Redis Cluster. Every worker is
 * stopped (SIGTERM: each appends its grants) before the first one on the Redis Cluster starts, so
 * two Redis never have issuers of one sequence at once; the new workers find every counter missing
 * while MongoDB holds its reservation and restore it (docs/design.md §5.11), as after a Redis that
 * lost its data.
 */
import type { WorkerPool } from "../pool.js";
import type { PhaseState } from "../records.js";

export interface RedisClusterContext {
  pool: Pick<WorkerPool, "replaceAll">;
  /** The workers' Redis settings on the Redis Cluster. */
  env: NodeJS.ProcessEnv;
}

export async function redisCluster(p: PhaseState, { pool, env }: RedisClusterContext): Promise<void> {
  const t = Date.now();
  const ids = await pool.replaceAll(env);
  p.notes.push(`pool stopped and started on the Redis Cluster in ${((Date.now() - t) / 1000).toFixed(1)} s (${ids.join(" ")})`);
  p.healedAt = Date.now();
}
