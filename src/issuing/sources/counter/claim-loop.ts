/**
 * A claim as an explicit loop over what each attempt came to (src/issuing/sources/counter/counter.ts): a block
 * `granted`, or a refusal that says what to do before the next attempt. Each refusal is tried a few
 * times; then, and for every other refusal, its error leaves the counter. No I/O of its own: the
 * counter supplies the steps.
 */
import type { Refusal, Refused } from "../../../redis/script-errors.js";

/** What a claim attempt came to when it took no block: a script's refusal, or `abandoned` / `stale` (counter.ts, reservation.ts). */
export type ClaimRefused = Refused<Refusal | "abandoned" | "stale">;

export interface ClaimSteps {
  /** One claim under the counter's epoch: `granted` (the block is in memory, or given up), or what happened instead. */
  attempt(): Promise<"granted" | ClaimRefused>;
  /** Raises the reservation (MongoDB, then Redis); undefined when raised. */
  raise(): Promise<ClaimRefused | undefined>;
  /** Restores the counter from MongoDB (§5.11); with `staleEpoch`, one this Redis holds under an epoch a restore elsewhere superseded (§5.16). */
  restore(staleEpoch?: number): Promise<void>;
  /** Forgets the epoch known and returns the counter's epoch in Redis when MongoDB's in force is newer. */
  staleEpoch(): Promise<number | undefined>;
  sleep(ms: number): Promise<void>;
}

/**
 * Claims until an attempt is granted. `exhausted`: raise the reservation; `missing` or `suspect`:
 * restore the counter from MongoDB, fenced by its epoch; `fenced` or `stale`: a restore is rewriting
 * the counter (wait, then read the epoch it records), or this Redis holds it under an epoch a
 * restore on another Redis superseded (restore it here); `abandoned`: claim afresh. Throws the
 * refusal's error once its tries are used up, and for `superseded` (WORKER_FENCED) at once.
 */
export async function claimLoop(s: ClaimSteps): Promise<void> {
  let raise = false;
  const tries = { exhausted: 0, restored: 0, fenced: 0, abandoned: 0 };
  for (;;) {
    let o: "granted" | ClaimRefused | undefined = raise ? await s.raise() : undefined;
    if (!o) {
      raise = false;
      o = await s.attempt();
    }
    if (o === "granted") return;
    if (!(await retry(o))) throw o.error;
  }

  /** Acts on a refusal before the next attempt; false when it is not tried again. */
  async function retry(o: ClaimRefused): Promise<boolean> {
    switch (o.refused) {
      case "abandoned":
        return tries.abandoned++ < 3;
      case "exhausted":
        raise = tries.exhausted++ < 3;
        return raise;
      case "missing":
      case "suspect":
        if (tries.restored++ >= 3) return false;
        // Redis lost the counter, or it may have gone back in time (another node wrote it).
        await s.restore();
        return true;
      case "fenced":
      case "stale": {
        if (tries.fenced++ >= 30) return false;
        const stale = await s.staleEpoch();
        if (stale !== undefined && tries.restored++ < 3) {
          // Not a restore in progress: this Redis holds the counter under an epoch a restore on
          // another Redis superseded (a split brain, or a failover back). Restored here from
          // MongoDB, it continues above every reservation that may have been used elsewhere.
          await s.restore(stale);
          return true;
        }
        // A restore is rewriting this counter: read the epoch it records in MongoDB and try again.
        await s.sleep(100);
        return true;
      }
      default:
        return false;
    }
  }
}
