/** `redis-flushall`: FLUSHALL on a running Redis; the workers recover by themselves. */
import type { StackControl } from "../private-stack.js";
import type { PhaseState } from "../records.js";
import { type RedisLostContext, recoverAfterLoss } from "./redis-lost.js";

export interface RedisFlushallContext extends RedisLostContext {
  stack: Pick<StackControl, "redisKeys" | "flushall">;
}

export async function redisFlushall(p: PhaseState, ctx: RedisFlushallContext): Promise<void> {
  await ctx.stack.flushall();
  p.notes.push("FLUSHALL");
  await recoverAfterLoss(p, ctx);
}
