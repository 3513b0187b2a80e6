/**
 * Abandoned claim records (design G4, strict grant log): a claim raises `cur` in Redis before its
 * grant is written, so a claimant killed between the two leaves a block no grant shows. The next
 * claim of the counter records each earlier write-ahead claim Redis returns as abandoned; where the
 * real grant exists, MongoDB refuses the record by its `_id`.
 */
import type { ClaimRecord } from "../../../redis/scripts.js";
import type { Grant } from "../../../storage/grants.js";

/**
 * The counter's earlier claims as abandoned claim records, when they may need one: write-ahead
 * claims that are not among the counter's own `written` ones. `grant` is the new claim's grant (its
 * sequence and period), `by` the worker recording them.
 */
export function abandonedRecords(claims: ClaimRecord[], written: readonly string[], grant: Grant, by: string): Grant[] {
  return claims
    .filter((p) => p.writeAhead && !written.includes(p.id))
    .map((p) => ({
      claim: p.id,
      sequence: grant.sequence,
      period: grant.period,
      first: p.first,
      last: p.last,
      epoch: p.epoch,
      worker: p.worker,
      at: p.at,
      abandoned: { gen: p.gen, by, at: new Date() },
    }));
}
