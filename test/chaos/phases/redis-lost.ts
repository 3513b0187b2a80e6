/**
 * What follows a loss of Redis's state (redis-restart.ts, redis-flushall.ts): nothing but waiting.
 * No operator step: workers restore every counter they need from MongoDB by themselves, take their
 * partitions again under new gens, and hold snowflake leases off one TTL (docs/design.md §5.6). The
 * phase counts as healed at once; the report's heal-to-ok time is how long the recovery took.
 */
import { sleep } from "../../support/wait.js";
import type { StackControl } from "../private-stack.js";
import type { PhaseState } from "../records.js";

export interface RedisLostContext {
  stack: Pick<StackControl, "redisKeys">;
  /** How long the phase watches the workers recover before the next one. */
  redisLostMs: number;
  log: (line: string) => void;
}

export async function recoverAfterLoss(p: PhaseState, { stack, redisLostMs }: RedisLostContext): Promise<void> {
  p.notes.push(`Redis right after: ${await stack.redisKeys()}`);
  p.healedAt = Date.now(); // nothing to do: the workers recover by themselves
  await sleep(redisLostMs);
  p.notes.push(`Redis ${redisLostMs} ms later: ${await stack.redisKeys()}`);
}
