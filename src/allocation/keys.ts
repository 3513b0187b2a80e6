/**
 * Every Redis key idd uses, built in one place. All keys of one sequence share the hash tag
 * `{seq:<name>}`. The claim scripts also read the global marker, so they need a standalone Redis (or
 * a primary with replicas), not Redis Cluster.
 */

/** The Redis state marker: present in a Redis whose counters idd may trust (see lua/claimBlock-2.lua). */
export const MARKER_KEY = "idd:marker";

/** The counter hash of one (sequence, period); `period` is null for sequences that never reset. */
export function counterKey(sequence: string, period: string | null): string {
  return `{seq:${sequence}}:${period ?? "all"}`;
}
