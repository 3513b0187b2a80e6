/**
 * Rejoining a consumer group after a member crashed for good: tried until it is in or the consumer
 * is closed, so that a broker still down (restarting, unreachable) cannot leave a worker out of the
 * group for good, alive but answering nothing.
 */

/** The wait before the first attempt; each failure doubles it, up to REJOIN_MAX_WAIT_MS. */
export const REJOIN_FIRST_WAIT_MS = 1000;
export const REJOIN_MAX_WAIT_MS = 30_000;

export interface RejoinSteps {
  isClosed(): boolean;
  /** Starts a fresh member; resolves once it is in the group. */
  join(): Promise<void>;
  /** After attempt `attempt` failed; the next comes in `retryInMs`. */
  failed(err: unknown, attempt: number, retryInMs: number): Promise<void>;
  /** Waits `ms` (default: a timer). */
  sleep?(ms: number): Promise<void>;
}

const timer = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Calls `join` after 1 s, then 2 s, 4 s, … at most 30 s after each failure, until it succeeds or `isClosed()`. */
export async function rejoinWithBackoff(steps: RejoinSteps): Promise<void> {
  const sleep = steps.sleep ?? timer;
  for (let attempt = 1, waitMs = REJOIN_FIRST_WAIT_MS; !steps.isClosed(); attempt++, waitMs = Math.min(waitMs * 2, REJOIN_MAX_WAIT_MS)) {
    await sleep(waitMs);
    if (steps.isClosed()) return;
    try {
      await steps.join();
      return;
    } catch (err) {
      await steps.failed(err, attempt, Math.min(waitMs * 2, REJOIN_MAX_WAIT_MS));
    }
  }
}
