/**
 * `cluster-failover`: SIGKILL the Redis Cluster primary of the shard holding the most sequences'
 * hash tags; its replica takes the shard over (with what it had replicated), the workers follow the
 * slot map and restore what went back from MongoDB by themselves (docs/design.md §5.6). The killed
 * node is restarted afterwards, as a replica.
 */
import { killClusterPrimary, restart } from "../../../stack/faults.js";
import { redisCall } from "../../../stack/redis.js";
import type { PhaseState } from "../records.js";
import { answeredAgain, type ClusterFaultContext } from "./cluster-faults.js";

export interface ClusterFailoverContext extends ClusterFaultContext {
  sequences: readonly string[];
}

export async function clusterFailover(p: PhaseState, ctx: ClusterFailoverContext): Promise<void> {
  const node = ctx.layout.ports.redisClusterNodes[0] as number;
  const slots = await Promise.all(ctx.sequences.map(async (s) => Number(await redisCall(node, "CLUSTER", "KEYSLOT", `{seq:${s}}`))));
  // The shard (slot range owner) of most sequences: kill the owner of one of their slots.
  const owners = new Map<number, number[]>();
  for (const slot of slots) {
    const ranges = (await redisCall(node, "CLUSTER", "SLOTS")) as [number, number, [string, number]][];
    const owner = Number(ranges.find(([from, to]) => from <= slot && slot <= to)?.[2][1]);
    owners.set(owner, [...(owners.get(owner) ?? []), slot]);
  }
  const [, shard] = [...owners].sort(([, a], [, b]) => b.length - a.length)[0] as [number, number[]];
  p.injectAt = Date.now();
  const f = await killClusterPrimary(ctx.layout, shard[0] as number);
  p.notes.push(
    `SIGKILL ${f.killed} (:${f.oldPort}, primary of ${shard.length} of ${slots.length} sequences), :${f.newPort} serves the shard ${((Date.now() - p.injectAt) / 1000).toFixed(1)} s later`,
  );
  await answeredAgain(p, ctx, `kill of ${f.killed}`);
  const t = Date.now();
  await restart(ctx.layout, f.killed);
  p.notes.push(`${f.killed} restarted as a replica in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  p.healedAt = Date.now();
}
