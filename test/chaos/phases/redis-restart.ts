/** `redis-restart`: Redis down, no dump file, up empty; the workers recover by themselves. */
import { existsSync, rmSync } from "node:fs";
import type { StackControl } from "../private-stack.js";
import type { PhaseState } from "../records.js";
import { type RedisLostContext, recoverAfterLoss } from "./redis-lost.js";

export interface RedisRestartContext extends RedisLostContext {
  stack: Pick<StackControl, "redisKeys" | "service" | "redisDumpFile">;
}

export async function redisRestart(p: PhaseState, ctx: RedisRestartContext): Promise<void> {
  await ctx.stack.service("redis", "down", p.notes);
  // The stack runs Redis with --save "" --appendonly no; a dump file would bring old state back.
  const dump = ctx.stack.redisDumpFile();
  if (existsSync(dump)) {
    rmSync(dump);
    p.notes.push("deleted a dump.rdb");
  }
  await ctx.stack.service("redis", "up", p.notes);
  await recoverAfterLoss(p, ctx);
}
