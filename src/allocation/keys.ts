/**
 * Every Redis key idd uses, built in one place. All keys of one sequence share the hash tag
 * `{seq:<name>}`, so each Lua script touches one cluster slot.
 */

/** The counter hash of one (sequence, period); `period` is null for sequences that never reset. */
export function counterKey(sequence: string, period: string | null): string {
  return `{seq:${sequence}}:${period ?? "all"}`;
}
