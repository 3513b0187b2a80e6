/**
 * Every Redis key idd uses, built here and nowhere else (as bullmq's QueueKeys): a reader finds the
 * whole keyspace in this file, and a script's header names the same keys.
 *
 * Hash tags. Redis Cluster hashes only the part of a key between the first `{` and the next `}`, and
 * one script may touch keys of one slot only. So every key of one sequence carries the sequence's
 * tag `{seq:<name>}` — its counters, its fence, its snowflake leases, bounds and high mark, its
 * recorded answers — and every key of one request topic the topic's tag `{idd:<topic>}` (the gen
 * and the partition count in force). Every script is given keys of one tag only (a script that builds
 * keys itself, lua/acquireLease-2.lua, builds them under the tag of a key it was given), so idd runs
 * on a standalone Redis, under Sentinel and on Redis Cluster alike (docs/design.md §1).
 */

/** The tag every key of one sequence carries. */
export function sequenceTag(sequence: string): string {
  return `{seq:${sequence}}`;
}

/** The counter hash of one (sequence, period); `period` is null for sequences that never reset. */
export function counterKey(sequence: string, period: string | null): string {
  return `${sequenceTag(sequence)}:${period ?? "all"}`;
}

/**
 * The fence of one sequence, all periods: a hash with the gen of its latest issuer (`gen`) and the
 * node identity it was set on (`node`) (lua/claimBlock-2.lua, lua/recordAnswers-n.lua; design I3).
 */
export function fenceKey(sequence: string): string {
  return `${sequenceTag(sequence)}:fence`;
}

/**
 * Snowflake worker-id leases of one sequence: `<prefix><id>` per worker id holds the holder's random
 * token and expires with the lease (lua/acquireLease-2.lua appends the id to the prefix, so every
 * lease key shares the sequence's hash tag).
 */
export function snowflakeLeasePrefix(sequence: string): string {
  return `${sequenceTag(sequence)}:lease:`;
}

/** The lease key of one worker id of one snowflake sequence (see snowflakeLeasePrefix). */
export function snowflakeLeaseKey(sequence: string, workerId: number): string {
  return `${snowflakeLeasePrefix(sequence)}${workerId}`;
}

/**
 * The issued-until bounds of one snowflake sequence: a hash, field = worker id, value = the latest
 * time (Unix ms) a holder of that id may have issued at; and the fields `node` (the node identity
 * the state was written under) and `holdoff` (Unix ms, Redis time: no new holder issues before it,
 * set when the node identity changed). Never expires, so a later holder reads it.
 */
export function snowflakeUntilKey(sequence: string): string {
  return `${sequenceTag(sequence)}:until`;
}

/**
 * The largest snowflake id of one sequence a worker recorded as answered (lua/recordAnswers-n.lua),
 * as 19 zero-padded digits so that Lua compares it as a string (ids exceed a double's 2^53). An issuer
 * under a newer gen issues only above it.
 */
export function snowflakeHighKey(sequence: string): string {
  return `${sequenceTag(sequence)}:high`;
}

/** The answer recorded for one (sequence, requestId), kept for the dedupe window (lua/recordAnswers-n.lua). */
export function answerKey(sequence: string, requestId: string): string {
  return `${sequenceTag(sequence)}:answer:${requestId}`;
}

/** The tag every key of one request topic carries. */
function topicTag(topic: string): string {
  return `{idd:${topic}}`;
}

/** The last gen taken for any partition of the request topic, with its node identity (lua/takeOwner-2.lua). */
export function genKey(topic: string): string {
  return `${topicTag(topic)}:gen`;
}

/** The largest partition count of the request topic any owner routed by (lua/takeOwner-2.lua). */
export function routeKey(topic: string): string {
  return `${topicTag(topic)}:route`;
}

/**
 * Keys of the layout before hash tags (docs/design.md §5.15), written only to fence workers of that
 * release out: their partition count in force, and their marker.
 */
export const OLD_LAYOUT = {
  routeKey: (topic: string) => `idd:route:${topic}`,
  markerKey: "idd:marker",
} as const;
