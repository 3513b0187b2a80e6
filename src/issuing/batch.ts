/**
 * One batch of a partition's requests as the dispenser answers it (dispenser.ts): opened under the
 * partition's lease (its gen taken, src/ownership/), with its earlier answers, its replies so far
 * and what it records.
 */

import type { Ownership } from "../ownership/ownership.js";
import type { PartitionLease } from "../ownership/partition-lease.js";
import type { IdReply } from "../protocol/reply.js";
import type { IdRequest } from "../protocol/request.js";
import type { AnswerRecorder } from "../recording/answer-recorder.js";
import type { StoredAnswer } from "../redis/stored-answer.js";
import type { SequenceDef } from "../sequences/sequence-def.js";
import type { GaplessWant } from "./gapless-source.js";
import type { BatchTake } from "./number-source.js";
import type { RedisGuard } from "./redis-guard.js";

/** One batch being answered: its routing, its gen and earlier answers, and its replies so far. */
export interface Batch extends BatchTake {
  partition: number;
  partitions: number;
  /** The sequences the batch issued numbers of: each is recorded (its fence checked). */
  sequences: Set<string>;
  /** Answers recorded earlier for requestIds of the batch (G6), looked up first only for `before` hooks. */
  earlier: Map<IdRequest, StoredAnswer>;
  /** Whether `earlier` was looked up: otherwise the record finds them (#record). */
  lookedUp: boolean;
  replies: IdReply[];
  /** Indexes of replies sent again from the dedupe store. */
  deduped: Set<number>;
  /** Answers issued now for requests with a requestId: what the batch records. */
  issued: { index: number; request: IdRequest; answer: StoredAnswer }[];
  /** Gapless ISSUEs, CONFIRMs and VOIDs, answered together after the other requests (`#gapless`). */
  later: { index: number; request: IdRequest; def: SequenceDef; now: number; want?: GaplessWant }[];
  /** Indexes of CONFIRM and VOID replies: their ranges are numbers settled, not issued. */
  settled: Set<number>;
}

/**
 * The batch's gen (taken now: the lease revokes what it held, so only blocks claimed from now on are
 * issued), and the answers recorded earlier only when a `before` hook is to be asked (`lookUp`:
 * retries are never shown to it): otherwise the record finds them, in the same round trip.
 */
export async function openBatch(
  lease: PartitionLease,
  partitions: number,
  requests: IdRequest[],
  d: { ownership: Ownership; recorder: AnswerRecorder; redis: RedisGuard; lookUp: boolean },
): Promise<Batch> {
  const { recorder, ownership, redis } = d;
  const { partition } = lease;
  const t = await redis.call(partition, () => ownership.take(lease, partitions));
  const lookedUp = t !== undefined && d.lookUp;
  const keyed = lookedUp ? requests.filter((r) => r.requestId !== "" && !r.settle) : []; // CONFIRM and VOID are idempotent: never recorded
  const found = keyed.length === 0 ? [] : ((await redis.call(partition, () => recorder.lookup(keyed))) ?? []);
  const earlier = new Map<IdRequest, StoredAnswer>();
  keyed.forEach((r, i) => {
    const answer = found[i];
    if (answer) earlier.set(r, answer);
  });
  return {
    partition,
    lease,
    partitions,
    gen: t?.gen,
    sequences: new Set(),
    earlier,
    lookedUp,
    highs: new Map(),
    replies: [],
    deduped: new Set(),
    issued: [],
    later: [],
    settled: new Set(),
  };
}

/**
 * `heartbeat`, called at most every `heartbeatMs` along a long batch (it keeps the partition);
 * a promise only when it beats, so a request between beats costs none.
 */
export function paced(
  heartbeat: () => Promise<void>,
  heartbeatMs: number,
  clock: () => number,
): (now: number) => Promise<void> | undefined {
  let beatAt = clock();
  return (now) => {
    if (now - beatAt < heartbeatMs) return undefined;
    beatAt = now;
    return heartbeat();
  };
}
