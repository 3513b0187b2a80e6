/**
 * Fencing and dedupe for one worker (G2, G6). Each request partition has an owner token in Redis
 * (`idd:owner:<topic>:<partition>`), replaced by a fresh random one by every worker that starts
 * issuing for it (random, not a counter: after Redis loses its state a counter would start over
 * and could hand a zombie's old token to a new owner). Taking a
 * token drops the worker's blocks for the partition's sequences, so it issues only from blocks
 * claimed afterwards — larger than anything an earlier owner issued. Every batch's answers are
 * recorded with the token (lua/recordAnswers-n.lua) before they are published; a worker whose
 * token is stale records and publishes nothing. Recorded answers double as the dedupe store: a
 * repeated requestId gets the recorded numbers back, from whichever worker answers it.
 *
 * Sequences live on their home partition, which depends on the request topic's partition count
 * (src/protocol/home-partition.ts). Tokens are taken and answers recorded under the count the
 * worker routes by, and Redis keeps the largest such count (`idd:route:<topic>`): once a worker
 * took a partition under a grown count, a worker still routing by the old one records nothing
 * (ROUTE_STALE) until it has learnt the new count, so a sequence that moved has one issuer.
 */
import { randomUUID } from "node:crypto";
import type { Redis, Result } from "ioredis";
import { IddError } from "../errors.js";
import type { Range } from "../protocol/reply.js";
import { snowflakeHighKey } from "../redis/keys.js";

declare module "ioredis" {
  interface RedisCommander<Context> {
    recordAnswers(numberOfKeys: number, ...args: string[]): Result<number | (string | null)[], Context>;
    takeOwner(ownerKey: string, routeKey: string, token: string, partitions: string): Result<number, Context>;
  }
}

/** Thrown when the request topic's partition count in force is larger than the one the caller routes by. */
export function routeStale(partitions: number, inForce: number): IddError {
  return new IddError(
    "ROUTE_STALE",
    `the request topic has ${inForce} partitions in force; this worker routed by ${partitions}: it learns the new count and routes again`,
    { retriable: true },
  );
}

export interface StoredAnswer {
  period: string | null;
  ranges: Range[];
  /** When the numbers were issued (formatted strings print it); absent in answers of older workers. */
  at?: number;
}

export interface Answer {
  sequence: string;
  requestId: string;
  answer: StoredAnswer;
}

/** `JSON.stringify([period, at, "first", "last", …])`, written directly (one per request). */
function encode(a: StoredAnswer): string {
  let out = a.period === null ? "[null" : `[${JSON.stringify(a.period)}`;
  if (a.at !== undefined) out += `,${a.at}`;
  for (const r of a.ranges) out += `,"${r.first}","${r.last}"`;
  return `${out}]`;
}
function decode(s: string): StoredAnswer {
  const [period, ...rest] = JSON.parse(s) as [string | null, ...(string | number)[]];
  const at = typeof rest[0] === "number" ? (rest.shift() as number) : undefined;
  const ranges: Range[] = [];
  for (let i = 0; i < rest.length; i += 2) ranges.push({ first: BigInt(rest[i] as string), last: BigInt(rest[i + 1] as string) });
  return { period, ranges, ...(at !== undefined && { at }) };
}

export class Ownership {
  readonly #redis: Redis;
  readonly #topic: string;
  readonly #windowMs: number;
  /** Per partition, the token this worker holds and the partition count it was taken under. */
  readonly #tokens = new Map<number, { token: string; partitions: number }>();

  constructor(redis: Redis, topic: string, windowMs: number) {
    this.#redis = redis;
    this.#topic = topic;
    this.#windowMs = windowMs;
  }

  #ownerKey = (partition: number) => `idd:owner:${this.#topic}:${partition}`;
  #routeKey = () => `idd:route:${this.#topic}`;
  static answerKey = (sequence: string, requestId: string) => `idd:answer:${sequence}:${requestId}`;

  /**
   * The token for `partition`, taken under `partitions` (the request topic's partition count the
   * worker routes by); `taken` is true when it was taken now (drop the partition's blocks first).
   * Throws ROUTE_STALE when Redis holds a larger count.
   */
  async token(partition: number, partitions: number): Promise<{ token: string; taken: boolean }> {
    const held = this.#tokens.get(partition);
    if (held?.partitions === partitions) return { token: held.token, taken: false };
    const token = randomUUID();
    const inForce = await this.#redis.takeOwner(this.#ownerKey(partition), this.#routeKey(), token, String(partitions));
    if (inForce !== 0) throw routeStale(partitions, inForce);
    this.#tokens.set(partition, { token, partitions });
    return { token, taken: true };
  }

  /** The largest partition count any owner routed by (0: none, or Redis lost it). */
  async partitionsInForce(): Promise<number> {
    return Number((await this.#redis.get(this.#routeKey())) ?? 0);
  }

  /** The largest snowflake id of `sequence` a partition owner recorded as answered (undefined: none, or Redis lost it). */
  async high(sequence: string): Promise<bigint | undefined> {
    const v = await this.#redis.get(snowflakeHighKey(sequence));
    return v === null ? undefined : BigInt(v);
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
    const found = await this.#redis.mget(...keys.map((k) => Ownership.answerKey(k.sequence, k.requestId)));
    return found.map((v) => (v == null ? undefined : decode(v)));
  }

  /**
   * Records answers under the partition's token and partition count. Returns, per answer, the one
   * recorded earlier for the same requestId (to be sent instead) or undefined. Throws WORKER_FENCED
   * when the token is stale, ROUTE_STALE when the count in force is another.
   */
  async record(
    partition: number,
    token: string,
    partitions: number,
    answers: Answer[],
    highs: ReadonlyMap<string, bigint> = new Map(),
  ): Promise<(StoredAnswer | undefined)[]> {
    const keys = [this.#ownerKey(partition), this.#routeKey(), ...answers.map((a) => Ownership.answerKey(a.sequence, a.requestId))];
    for (const sequence of highs.keys()) keys.push(snowflakeHighKey(sequence));
    const r = await this.#redis.recordAnswers(
      keys.length,
      ...keys,
      token,
      String(partitions),
      String(this.#windowMs),
      String(answers.length),
      ...answers.map((a) => encode(a.answer)),
      ...[...highs.values()].map((id) => id.toString().padStart(19, "0")),
    );
    if (!Array.isArray(r)) {
      this.#tokens.delete(partition);
      if (r !== -2) throw routeStale(partitions, r);
      throw new IddError("WORKER_FENCED", `partition ${partition} has a newer owner than token ${token}`);
    }
    return r.map((v) => (v == null ? undefined : decode(v)));
  }
}
