/**
 * MongoDB's answer to "was this snowflake sequence ever leased?", asked when its state is missing in
 * Redis (design §5.6): new (no hold-off) or lost (hold off one TTL). MongoDB first, as I1: the record
 * is written, with majority write concern, before the first lease is asked for. MongoDB unreachable:
 * a sequence this worker saw leased before is lost (hold off); any other cannot be leased until
 * MongoDB answers (UNAVAILABLE), since a lease granted unrecorded could later vanish with Redis
 * unseen by a worker that MongoDB tells the sequence is new.
 */
import type { Store } from "../../../storage/store.js";

export function firstLeaseCheck(store: Pick<Store, "recordFirstSnowflakeLease">): (sequence: string) => Promise<boolean> {
  const leased = new Set<string>();
  return async (sequence) => {
    try {
      const first = await store.recordFirstSnowflakeLease(sequence);
      leased.add(sequence);
      return first;
    } catch (e) {
      if (leased.has(sequence)) return false;
      throw e;
    }
  };
}
