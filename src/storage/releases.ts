/**
 * The `releases` collection: numbers of audited sequences (definition `audit`) that a worker held and
 * gave up without answering them, one record per run, with why. Appended in batches like the grants
 * (src/issuing/sources/counter/allocator.ts); a worker that dies leaves none, which is how `idd audit` tells a
 * death from the other reasons (src/audit/walk.ts).
 */
import { RunCollection, runIndexes } from "./runs.js";

/**
 * Why numbers were given up (docs/recovery.md: Auditing):
 * - `partition-lost`: the sequence's home partition went to another worker in a rebalance;
 * - `partitions-grown`: the request topic grew, so sequences may have new home partitions;
 * - `retaken`: the partition was taken again under a new gen (after Redis lost state, or a fence);
 * - `fenced`: a newer issuer claimed the sequence, or routes by a larger partition count;
 * - `fenced-batch`: numbers a batch took whose answers a newer issuer's fence refused (never sent);
 * - `batch-abandoned`: numbers a batch took before it failed as a whole, unsent: it stalled waiting
 *   on Redis (and was answered again), or its partition went elsewhere while it ran;
 * - `retry-replaced`: numbers taken for a request that turned out to be a retry, sent its first answer instead;
 * - `unrecorded`: numbers answered in a batch whose issuance record could not be written (MongoDB
 *   down): their replies became UNAVAILABLE and never carried them;
 * - `claim-unused`: a block claimed from Redis and never used: its write-ahead grant failed, or a
 *   restore rewrote the counter while it was written;
 * - `definition-changed`: the sequence was updated (`idd seq update`);
 * - `period-ended`: a new day, month or year of a restarting sequence began;
 * - `stopped`: the worker stopped (SIGTERM).
 */
export const RELEASE_WHYS = [
  "partition-lost",
  "partitions-grown",
  "retaken",
  "fenced",
  "fenced-batch",
  "batch-abandoned",
  "retry-replaced",
  "claim-unused",
  "unrecorded",
  "definition-changed",
  "period-ended",
  "stopped",
] as const;
export type ReleaseWhy = (typeof RELEASE_WHYS)[number];

export interface Release {
  sequence: string;
  period: string | null;
  first: bigint;
  last: bigint;
  why: ReleaseWhy;
  worker: string;
  at: Date;
}

export const RELEASE_INDEXES = runIndexes("releases");

export class ReleaseRepository extends RunCollection<Release> {}
