/**
 * `kafka-leader`: SIGKILL the broker leading the busiest request partition (the home of most
 * sequences), wait until every sequence answers again with the broker still down, then restart it.
 */

import { homePartition } from "../../../src/protocol/home-partition.js";
import { kafkaNode, killPartitionLeader, restart } from "../../../stack/faults.js";
import type { PhaseState } from "../records.js";
import { answeredAgain, type ClusterFaultContext } from "./cluster-faults.js";

export interface KafkaLeaderContext extends ClusterFaultContext {
  requestTopic: string;
  partitions: number;
  sequences: readonly string[];
}

export async function kafkaLeader(p: PhaseState, ctx: KafkaLeaderContext): Promise<void> {
  const homes = new Map<number, number>();
  for (const s of ctx.sequences) {
    const h = homePartition(s, ctx.partitions);
    homes.set(h, (homes.get(h) ?? 0) + 1);
  }
  const [busiest, n] = [...homes].sort(([, a], [, b]) => b - a)[0] as [number, number];
  p.injectAt = Date.now();
  const { killed, leader } = await killPartitionLeader(ctx.layout, ctx.requestTopic, busiest);
  p.notes.push(
    `SIGKILL broker ${killed}, leader of ${ctx.requestTopic}-${busiest} (home of ${n} sequences); broker ${leader} leads it after ${((Date.now() - p.injectAt) / 1000).toFixed(1)} s`,
  );
  await answeredAgain(p, ctx, `kill of broker ${killed}`);
  const t = Date.now();
  await restart(ctx.layout, kafkaNode(killed));
  p.notes.push(`broker ${killed} restarted in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  p.healedAt = Date.now();
}
