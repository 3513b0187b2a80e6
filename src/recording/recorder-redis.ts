/**
 * The recorder's Redis calls, as raw ioredis commands in one place: taking a partition's owner
 * token (lua/takeOwner-2.lua), reading the partition count in force, reading recorded answers and
 * recording a batch's answers (lua/recordAnswers-n.lua) with the snowflake high marks. Keys:
 * `idd:owner:<topic>:<partition>`, `idd:route:<topic>`, `idd:answer:<sequence>:<requestId>`, and
 * the high marks' (allocation/keys.ts).
 */
import type { Redis, Result } from "ioredis";
import { snowflakeHighKey } from "../allocation/keys.js";

declare module "ioredis" {
  interface RedisCommander<Context> {
    recordAnswers(numberOfKeys: number, ...args: string[]): Result<number | (string | null)[], Context>;
    takeOwner(ownerKey: string, routeKey: string, token: string, partitions: string): Result<number, Context>;
  }
}

const ownerKey = (topic: string, partition: number) => `idd:owner:${topic}:${partition}`;
const routeKey = (topic: string) => `idd:route:${topic}`;
export const answerKey = (sequence: string, requestId: string) => `idd:answer:${sequence}:${requestId}`;

/** Takes the partition's token under `partitions`: 0, or the larger count in force (nothing taken). */
export function takeOwner(redis: Redis, topic: string, partition: number, token: string, partitions: number): Promise<number> {
  return redis.takeOwner(ownerKey(topic, partition), routeKey(topic), token, String(partitions));
}

/** The largest partition count any owner routed by (null: none, or Redis lost it). */
export function routeInForce(redis: Redis, topic: string): Promise<string | null> {
  return redis.get(routeKey(topic));
}

/** The recorded answers (encoded) of these (sequence, requestId)s, null where there is none. */
export function recordedAnswers(redis: Redis, keys: { sequence: string; requestId: string }[]): Promise<(string | null)[]> {
  return redis.mget(...keys.map((k) => answerKey(k.sequence, k.requestId)));
}

export interface RecordCall {
  topic: string;
  partition: number;
  token: string;
  partitions: number;
  windowMs: number;
  /** Per answer, its (sequence, requestId) and the encoded answer. */
  answers: { sequence: string; requestId: string; encoded: string }[];
  /** The largest snowflake id answered per sequence. */
  highs: ReadonlyMap<string, bigint>;
}

/**
 * Records answers under the partition's token and count: per answer, the one recorded earlier
 * (encoded) or null; -2 when the token is stale; the count in force when it is another.
 */
export function recordAnswers(redis: Redis, c: RecordCall): Promise<number | (string | null)[]> {
  const keys = [ownerKey(c.topic, c.partition), routeKey(c.topic), ...c.answers.map((a) => answerKey(a.sequence, a.requestId))];
  for (const sequence of c.highs.keys()) keys.push(snowflakeHighKey(sequence));
  return redis.recordAnswers(
    keys.length,
    ...keys,
    c.token,
    String(c.partitions),
    String(c.windowMs),
    String(c.answers.length),
    ...c.answers.map((a) => a.encoded),
    ...[...c.highs.values()].map((id) => id.toString().padStart(19, "0")),
  );
}
