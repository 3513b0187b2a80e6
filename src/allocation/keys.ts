/**
 * Every Redis key idd uses, built in one place. All keys of one sequence share the hash tag
 * `{seq:<name>}`. The claim scripts also read the global marker, so they need a standalone Redis (or
 * a primary with replicas), not Redis Cluster.
 */

/** The Redis state marker: present in a Redis whose counters idd may trust (see lua/claimBlock-2.lua). */
export const MARKER_KEY = "idd:marker";
/** When the marker was last written (Unix ms): snowflake leases hold new holders off until a TTL after it (lua/acquireLease-2.lua). */
export const MARKER_AT_KEY = "idd:marker:at";

/** The counter hash of one (sequence, period); `period` is null for sequences that never reset. */
export function counterKey(sequence: string, period: string | null): string {
  return `{seq:${sequence}}:${period ?? "all"}`;
}

/**
 * Snowflake worker-id leases of one sequence: `<prefix><id>` per worker id holds the holder's random
 * token and expires with the lease (the scripts append the id to the prefix, so every lease key
 * shares the sequence's hash tag `{snow:<name>}`).
 */
export function snowflakeLeasePrefix(sequence: string): string {
  return `{snow:${sequence}}:lease:`;
}

/**
 * The issued-until bounds of one snowflake sequence: a hash, field = worker id, value = the latest
 * time (Unix ms) a holder of that id may have issued at. Never expires, so a later holder reads it.
 */
export function snowflakeUntilKey(sequence: string): string {
  return `{snow:${sequence}}:until`;
}

/**
 * The largest snowflake id of one sequence a partition owner recorded as answered (lua/recordAnswers-n.lua),
 * as 19 zero-padded digits so that Lua compares it as a string (ids exceed a double's 2^53). The
 * partition's next owner issues only above it.
 */
export function snowflakeHighKey(sequence: string): string {
  return `{snow:${sequence}}:high`;
}
