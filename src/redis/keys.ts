/**
 * Every Redis key idd uses, built here and nowhere else (as bullmq's QueueKeys): a reader finds the
 * whole keyspace in this file, and a script's header names the same keys.
 *
 * Hash tags. Redis Cluster hashes only the part of a key between the first `{` and the next `}`, and
 * one script may touch keys of one slot only. So every key of one sequence carries the sequence's
 * tag: `{seq:<name>}` for its counters, `{snow:<name>}` for its snowflake leases, issued-until bounds
 * and high mark; a script that builds keys itself (lua/acquireLease-2.lua) builds them under the tag
 * of a key it was given. Keys of the whole installation (`idd:…`: the marker, owner tokens, the
 * partition count in force, recorded answers) carry no tag, and several scripts read them beside a
 * tagged key: idd needs a standalone Redis (or a primary with replicas), not Redis Cluster.
 */

/** The Redis state marker: present in a Redis whose counters idd may trust (see lua/claimBlock-2.lua). */
export const MARKER_KEY = "idd:marker";
/** When the marker was last written (Unix ms): snowflake leases hold new holders off until a TTL after it (lua/acquireLease-2.lua). */
export const MARKER_AT_KEY = "idd:marker:at";
/** Held (SET PX NX, the worker's id) by the one worker that replays on start while the others wait (src/recovery/replay-on-start.ts). */
export const REPLAY_LOCK_KEY = "idd:marker:replaying";

/** The counter hash of one (sequence, period); `period` is null for sequences that never reset. */
export function counterKey(sequence: string, period: string | null): string {
  return `{seq:${sequence}}:${period ?? "all"}`;
}

/**
 * Snowflake worker-id leases of one sequence: `<prefix><id>` per worker id holds the holder's random
 * token and expires with the lease (lua/acquireLease-2.lua appends the id to the prefix, so every
 * lease key shares the sequence's hash tag `{snow:<name>}`).
 */
export function snowflakeLeasePrefix(sequence: string): string {
  return `{snow:${sequence}}:lease:`;
}

/** The lease key of one worker id of one snowflake sequence (see snowflakeLeasePrefix). */
export function snowflakeLeaseKey(sequence: string, workerId: number): string {
  return `${snowflakeLeasePrefix(sequence)}${workerId}`;
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

/** The owner token of one request partition: a fresh random one per worker that takes it (lua/takeOwner-2.lua). */
export function ownerKey(topic: string, partition: number): string {
  return `idd:owner:${topic}:${partition}`;
}

/** The largest partition count of the request topic any owner routed by (lua/takeOwner-2.lua). */
export function routeKey(topic: string): string {
  return `idd:route:${topic}`;
}

/** The answer recorded for one (sequence, requestId), kept for the dedupe window (lua/recordAnswers-n.lua). */
export function answerKey(sequence: string, requestId: string): string {
  return `idd:answer:${sequence}:${requestId}`;
}
