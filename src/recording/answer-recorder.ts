/**
 * Fencing and dedupe for one worker (G2, G6; docs/design.md I3). A worker that starts answering a
 * request partition takes a gen for it (lua/takeOwner-2.lua): a number that only grows, made from
 * Redis time. It drops its blocks of the partition's sequences, and claims and records every
 * sequence homed there under that gen only. Per sequence, Redis keeps the fence, the gen of its
 * latest issuer: a claim raises it, and a batch's answers are recorded, one script call per sequence
 * (lua/recordAnswers-n.lua), only while it still holds the recorder's gen. A worker that another
 * issuer superseded records and publishes nothing. Recorded answers double as the dedupe store: a
 * repeated requestId gets the recorded numbers back, from whichever worker answers it.
 *
 * Sequences live on their home partition, which depends on the request topic's partition count
 * (src/protocol/home-partition.ts). Gens are taken under the count the worker routes by, and Redis
 * keeps the largest such count: a worker routing by an outgrown count gets no gen (ROUTE_STALE)
 * until it has learnt the new count, and is fenced at its next record or claim of a sequence that
 * moved, once the sequence's new home claimed it.
 */
import { isIddError } from "../core/errors.js";
import type { RedisClient } from "../redis/client-type.js";
import { answerKey, OLD_LAYOUT, routeKey } from "../redis/keys.js";
import { Scripts } from "../redis/scripts.js";
import { type Answer, decodeAnswer, type StoredAnswer } from "../redis/stored-answer.js";

export class AnswerRecorder {
  readonly #redis: RedisClient;
  readonly #scripts: Scripts;
  readonly #topic: string;
  /** How long recorded answers are kept for retries (IDD_DEDUPE_WINDOW_MS); 0: dedupe off. */
  readonly #windowMs: number;
  /** Per partition, the gen this worker holds and the partition count it was taken under. */
  readonly #gens = new Map<number, { gen: number; partitions: number }>();

  constructor(redis: RedisClient, topic: string, windowMs: number) {
    this.#redis = redis;
    this.#scripts = new Scripts(redis);
    this.#topic = topic;
    this.#windowMs = windowMs;
  }

  /**
   * The gen for `partition`, taken under `partitions` (the request topic's partition count the
   * worker routes by); `taken` is true when it was taken now (drop the partition's blocks first).
   * Throws ROUTE_STALE when Redis holds a larger count.
   */
  /**
   * Raises `sequence`'s fence to `gen` without a claim: the first use under `gen` of a sequence that
   * takes no blocks (gapless; lua/fenceSnowflake-2.lua, which snowflakes use the same way). Throws
   * WORKER_FENCED when a newer gen holds it.
   */
  async fence(sequence: string, gen: number): Promise<void> {
    await this.#scripts.fenceSnowflake({ sequence, gen });
  }

  async gen(partition: number, partitions: number): Promise<{ gen: number; taken: boolean }> {
    const held = this.#gens.get(partition);
    if (held?.partitions === partitions) return { gen: held.gen, taken: false };
    const gen = await this.#scripts.takeOwner({ topic: this.#topic, partitions });
    this.#gens.set(partition, { gen, partitions });
    return { gen, taken: true };
  }

  /** The largest partition count any owner routed by (0: none, or Redis lost it). */
  async partitionsInForce(): Promise<number> {
    return Number((await this.#redis.get(routeKey(this.#topic))) ?? 0);
  }

  /** Sets the count in force outright: only for a request topic created again with fewer partitions. */
  async setPartitionsInForce(partitions: number): Promise<void> {
    await this.#redis.set(routeKey(this.#topic), String(partitions));
  }

  /**
   * Fences workers of the release before per-sequence keys out (docs/design.md §5.15): their
   * partition count in force becomes `inf`, larger than any count they route by, so they neither
   * take partitions nor record (ROUTE_STALE); and their marker goes, so their claims fail closed.
   */
  async fenceOldWorkers(): Promise<void> {
    await this.#redis.set(OLD_LAYOUT.routeKey(this.#topic), "inf");
    await this.#redis.del(OLD_LAYOUT.markerKey);
  }

  forget(partition: number): void {
    this.#gens.delete(partition);
  }

  /** Forgets every gen: the worker routes by a new partition count and takes its partitions again. */
  forgetAll(): void {
    this.#gens.clear();
  }

  /** Answers recorded earlier for these (sequence, requestId)s, if any (dedupe off: none). One MGET per sequence, sent together. */
  async lookup(keys: { sequence: string; requestId: string }[]): Promise<(StoredAnswer | undefined)[]> {
    if (this.#windowMs === 0 || keys.length === 0) return keys.map(() => undefined);
    const out: (StoredAnswer | undefined)[] = keys.map(() => undefined);
    await Promise.all(
      [...groupBy(keys, (k) => k.sequence)].map(async ([sequence, at]) => {
        const found = await this.#redis.mget(...at.map((i) => answerKey(sequence, (keys[i] as { requestId: string }).requestId)));
        found.forEach((v, j) => {
          if (v != null) out[at[j] as number] = decodeAnswer(v);
        });
      }),
    );
    return out;
  }

  /**
   * Records a batch's answers under `gen`, one script call per sequence of `sequences` (every
   * sequence the batch issued numbers of, with or without answers to keep), sent together: one round
   * trip to a standalone Redis, one per node of a cluster. `highs`: the largest snowflake id answered
   * per snowflake sequence (the next issuer issues above it). Returns, per answer, the one recorded
   * earlier for the same requestId (to be sent instead) or undefined. Throws WORKER_FENCED when any
   * sequence's fence is not `gen`; the gen is then forgotten (the caller takes the partition again).
   */
  async record(
    partition: number,
    gen: number,
    sequences: Iterable<string>,
    answers: Answer[],
    highs: ReadonlyMap<string, bigint> = new Map(),
  ): Promise<(StoredAnswer | undefined)[]> {
    const bySequence = groupBy(answers, (a) => a.sequence);
    for (const s of sequences) if (!bySequence.has(s)) bySequence.set(s, []);
    const out: (StoredAnswer | undefined)[] = answers.map(() => undefined);
    const calls = [...bySequence].map(async ([sequence, at]) => {
      const high = highs.get(sequence);
      const recorded = await this.#scripts.recordAnswers({
        sequence,
        gen,
        windowMs: this.#windowMs,
        answers: at.map((i) => answers[i] as Answer),
        ...(high !== undefined && { high }),
      });
      recorded.forEach((r, j) => {
        out[at[j] as number] = r;
      });
    });
    const results = await Promise.allSettled(calls);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) {
      const fenced = results.find((r): r is PromiseRejectedResult => r.status === "rejected" && isIddError(r.reason, "WORKER_FENCED"));
      if (fenced) {
        this.#gens.delete(partition);
        throw fenced.reason;
      }
      throw failed.reason;
    }
    return out;
  }
}

/** Indexes of `xs` by key, in order. */
function groupBy<T>(xs: readonly T[], key: (x: T) => string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  xs.forEach((x, i) => {
    const k = key(x);
    const at = out.get(k);
    if (at) at.push(i);
    else out.set(k, [i]);
  });
  return out;
}
