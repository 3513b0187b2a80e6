/**
 * What the cluster profile's phases share (kafka-leader.ts, sentinel-failover.ts, cluster-failover.ts,
 * redis-cluster.ts): the cluster's layout for stack/faults.ts, and a probe of every sequence, so a
 * phase can tell when the service answered again while the failed node is still down (before it
 * restarts it for the next phase).
 */
import type { StackLayout } from "../../../stack/paths.js";
import type { PhaseState } from "../records.js";

export interface ClusterFaultContext {
  layout: StackLayout;
  /** Resolves true once every sequence answered one probe with numbers (false after the profile's recover timeout). */
  probeAll: () => Promise<boolean>;
}

/** Probes until every sequence answers, and notes how long after the injection that was (the node still down). */
export async function answeredAgain(p: PhaseState, ctx: ClusterFaultContext, what: string): Promise<void> {
  const ok = await ctx.probeAll();
  p.notes.push(
    ok
      ? `every sequence answered ${((Date.now() - p.injectAt) / 1000).toFixed(1)} s after the ${what}, before any restart`
      : `NOT every sequence answered while ${what} lasted`,
  );
}
