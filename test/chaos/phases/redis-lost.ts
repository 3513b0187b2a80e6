/**
 * What follows a loss of Redis's state (redis-restart.ts, redis-flushall.ts): workers must fail
 * closed for a while, then `idd replay` rebuilds the counters from MongoDB, as an operator would.
 */
import { sleep } from "../../support/wait.js";
import type { StackControl } from "../private-stack.js";
import type { PhaseState } from "../records.js";

export interface RedisLostContext {
  stack: Pick<StackControl, "redisKeys">;
  /** Time between losing Redis's state and running replay. */
  redisLostMs: number;
  /** Runs `idd replay`. */
  replay: () => Promise<{ ok: boolean; note: string }>;
  log: (line: string) => void;
}

export async function replayAfterLoss(p: PhaseState, { stack, redisLostMs, replay, log }: RedisLostContext): Promise<void> {
  p.notes.push(`Redis right after: ${await stack.redisKeys()}`);
  await sleep(redisLostMs); // workers must fail closed now: REDIS_STATE_* error replies
  p.notes.push(`Redis before replay: ${await stack.redisKeys()}`);
  const r = await replay();
  p.notes.push(r.note);
  log(`  ${r.note}`);
  if (!r.ok) p.notes.push("NOT HEALED: replay failed");
  p.healedAt = Date.now();
}
