/**
 * `sentinel-failover`: the Sentinel group's replica frozen and cut off while the load writes to the
 * primary for `lagMs`, then the primary SIGKILLed: the Sentinels promote the replica, which never
 * saw those writes (claims, gens, fences, records). The workers follow the Sentinels to the new
 * primary and restore what went back from MongoDB by themselves (docs/design.md §5.6); the old
 * primary is restarted afterwards, as the new one's replica.
 */
import { failoverLosingWrites, restart } from "../../../stack/faults.js";
import { redisInfo } from "../../../stack/redis.js";
import { sleep } from "../../support/wait.js";
import type { PhaseState } from "../records.js";
import { answeredAgain, type ClusterFaultContext } from "./cluster-faults.js";

export interface SentinelFailoverContext extends ClusterFaultContext {
  lagMs: number;
}

export async function sentinelFailover(p: PhaseState, ctx: SentinelFailoverContext): Promise<void> {
  let lost = 0;
  const f = await failoverLosingWrites(ctx.layout, async (port) => {
    const offset = async () => Number((await redisInfo(port, "replication")).master_repl_offset);
    const from = await offset();
    await sleep(ctx.lagMs); // the load goes on, on the primary only
    lost = (await offset()) - from;
    p.injectAt = Date.now(); // the primary is killed now
  });
  p.notes.push(
    `replica frozen ${ctx.lagMs} ms, ${lost} bytes of writes it never got; primary :${f.oldPrimary} killed, :${f.newPrimary} promoted ${((Date.now() - p.injectAt) / 1000).toFixed(1)} s later`,
  );
  await answeredAgain(p, ctx, "failover");
  const t = Date.now();
  await restart(ctx.layout, f.killed);
  p.notes.push(`${f.killed} restarted as a replica in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  p.healedAt = Date.now();
}
