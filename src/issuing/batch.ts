/**
 * One batch of a partition's requests as the dispenser answers it (dispenser.ts): opened under the
 * partition's lease (its gen taken, src/ownership/), with its earlier answers and each request's
 * outcome so far.
 */

import type { Ownership } from "../ownership/ownership.js";
import type { PartitionLease } from "../ownership/partition-lease.js";
import type { IdRequest } from "../protocol/request.js";
import type { AnswerRecorder } from "../recording/answer-recorder.js";
import type { StoredAnswer } from "../redis/stored-answer.js";
import type { Outcome } from "./outcome.js";
import type { RedisGuard } from "./redis-guard.js";

/** One batch being answered: its routing, its gen and earlier answers, and what became of each request so far. */
export interface Batch {
  partition: number;
  lease: PartitionLease;
  /** The gen of the partition the batch is answered under (undefined: Redis was unreachable). */
  gen: number | undefined;
  /** The largest snowflake id answered per sequence, recorded with the answers. */
  highs: Map<string, bigint>;
  partitions: number;
  requests: readonly IdRequest[];
  /** What became of each request (outcome.ts), in the requests' order: filled by the take phase, then replaced by later phases. */
  outcomes: Outcome[];
  /** The sequences the batch issued numbers of: each is recorded (its fence checked). */
  sequences: Set<string>;
  /** Answers recorded earlier for requestIds of the batch (G6), looked up first only for `before` hooks. */
  earlier: Map<IdRequest, StoredAnswer>;
  /** Whether `earlier` was looked up: otherwise the record finds them (#record). */
  lookedUp: boolean;
}

/** What a number source sees of the batch it takes for (sources/number-source.ts). */
export type BatchTake = Pick<Batch, "lease" | "gen" | "highs">;

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
    requests,
    outcomes: [],
    sequences: new Set(),
    earlier,
    lookedUp,
    highs: new Map(),
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
