/**
 * Fencing and dedupe for one worker (G2, G6). Each request partition has an owner token in Redis,
 * replaced by a fresh random one by every worker that starts issuing for it (random, not a counter:
 * after Redis loses its state a counter would start over and could hand a zombie's old token to a
 * new owner). Taking a token drops the worker's blocks for the partition's sequences, so it issues
 * only from blocks claimed afterwards — larger than anything an earlier owner issued. Every batch's
 * answers are recorded with the token (lua/recordAnswers-n.lua) before they are published; a worker
 * whose token is stale records and publishes nothing. Recorded answers double as the dedupe store:
 * a repeated requestId gets the recorded numbers back, from whichever worker answers it.
 *
 * Sequences live on their home partition, which depends on the request topic's partition count
 * (src/protocol/home-partition.ts). Tokens are taken and answers recorded under the count the
 * worker routes by, and Redis keeps the largest such count: once a worker took a partition under a
 * grown count, a worker still routing by the old one records nothing (ROUTE_STALE) until it has
 * learnt the new count, so a sequence that moved has one issuer.
 */
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { isIddError } from "../core/errors.js";
import { answerKey, routeKey } from "../redis/keys.js";
import { Scripts } from "../redis/scripts.js";
import { type Answer, decodeAnswer, type StoredAnswer } from "../redis/stored-answer.js";

export class AnswerRecorder {
  readonly #redis: Redis;
  readonly #scripts: Scripts;
  readonly #topic: string;
  /** How long recorded answers are kept for retries (IDD_DEDUPE_WINDOW_MS); 0: dedupe off. */
  readonly #windowMs: number;
  /** Per partition, the token this worker holds and the partition count it was taken under. */
  readonly #tokens = new Map<number, { token: string; partitions: number }>();

  constructor(redis: Redis, topic: string, windowMs: number) {
    this.#redis = redis;
    this.#scripts = new Scripts(redis);
    this.#topic = topic;
    this.#windowMs = windowMs;
  }

  /**
   * The token for `partition`, taken under `partitions` (the request topic's partition count the
   * worker routes by); `taken` is true when it was taken now (drop the partition's blocks first).
   * Throws ROUTE_STALE when Redis holds a larger count.
   */
  async token(partition: number, partitions: number): Promise<{ token: string; taken: boolean }> {
    const held = this.#tokens.get(partition);
    if (held?.partitions === partitions) return { token: held.token, taken: false };
    const token = randomUUID();
    await this.#scripts.takeOwner({ topic: this.#topic, partition, token, partitions });
    this.#tokens.set(partition, { token, partitions });
    return { token, taken: true };
  }

  /** The largest partition count any owner routed by (0: none, or Redis lost it). */
  async partitionsInForce(): Promise<number> {
    return Number((await this.#redis.get(routeKey(this.#topic))) ?? 0);
  }

  /** Sets the count in force outright: only for a request topic created again with fewer partitions. */
  async setPartitionsInForce(partitions: number): Promise<void> {
    await this.#redis.set(routeKey(this.#topic), String(partitions));
  }

  forget(partition: number): void {
    this.#tokens.delete(partition);
  }

  /** Forgets every token: the worker routes by a new partition count and takes its partitions again. */
  forgetAll(): void {
    this.#tokens.clear();
  }

  /** Answers recorded earlier for these (sequence, requestId)s, if any (dedupe off: none). */
  async lookup(keys: { sequence: string; requestId: string }[]): Promise<(StoredAnswer | undefined)[]> {
    if (this.#windowMs === 0 || keys.length === 0) return keys.map(() => undefined);
    const found = await this.#redis.mget(...keys.map((k) => answerKey(k.sequence, k.requestId)));
    return found.map((v) => (v == null ? undefined : decodeAnswer(v)));
  }

  /**
   * Records answers under the partition's token and partition count, with the largest snowflake id
   * answered per sequence (`highs`: the partition's next owner issues above them). Returns, per
   * answer, the one recorded earlier for the same requestId (to be sent instead) or undefined.
   * Throws WORKER_FENCED when the token is stale, ROUTE_STALE when the count in force is another;
   * either way the token is forgotten.
   */
  async record(
    partition: number,
    token: string,
    partitions: number,
    answers: Answer[],
    highs: ReadonlyMap<string, bigint> = new Map(),
  ): Promise<(StoredAnswer | undefined)[]> {
    try {
      return await this.#scripts.recordAnswers({
        topic: this.#topic,
        partition,
        token,
        partitions,
        windowMs: this.#windowMs,
        answers,
        highs,
      });
    } catch (e) {
      if (isIddError(e, "WORKER_FENCED") || isIddError(e, "ROUTE_STALE")) this.#tokens.delete(partition);
      throw e;
    }
  }
}
