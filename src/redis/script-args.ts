/**
 * The arguments of every script in lua/, built by one pure function each (bullmq's `…Args`
 * methods): KEYS and ARGV in the order the script's header lists them, every value as the string
 * Redis receives. Unit tests check them without Redis; `Scripts` sends them.
 */
import {
  answerKey,
  MARKER_KEY,
  ownerKey,
  routeKey,
  snowflakeHighKey,
  snowflakeLeaseKey,
  snowflakeLeasePrefix,
  snowflakeUntilKey,
} from "./keys.js";
import { type Answer, encodeAnswer } from "./stored-answer.js";

/** What one script call sends: its KEYS, then its ARGV. */
export interface ScriptCall {
  keys: string[];
  args: string[];
}

/** One (sequence, period) counter: `counterKey` of it. */
type Counter = { counter: string };

export interface ClaimBlockInput extends Counter {
  /** Numbers wanted, at least 1. */
  size: number;
  /** The fence epoch the caller read. */
  epoch: string;
  /** The Redis state marker the caller read. */
  marker: string;
  /** Fresh per claim; sent again when the claim's answer never came, to get the same block. */
  claimId: string;
}

export function claimBlockArgs(a: ClaimBlockInput): ScriptCall {
  return { keys: [a.counter, MARKER_KEY], args: [String(a.size), a.epoch, a.marker, a.claimId] };
}

export interface RaiseMaxInput extends Counter {
  max: bigint;
  epoch: string;
  marker: string;
}

export function raiseMaxArgs(a: RaiseMaxInput): ScriptCall {
  return { keys: [a.counter, MARKER_KEY], args: [a.max.toString(), a.epoch, a.marker] };
}

export interface InitCounterInput extends Counter {
  /** start - 1. */
  cur: bigint;
  /** The reservation MongoDB holds. */
  max: bigint;
  epoch: string;
  marker: string;
}

export function initCounterArgs(a: InitCounterInput): ScriptCall {
  return { keys: [a.counter, MARKER_KEY], args: [a.cur.toString(), a.max.toString(), a.epoch, a.marker] };
}

export interface FenceCounterInput extends Counter {
  /** The fence token, unique per replay run. */
  token: string;
}

export function fenceCounterArgs(a: FenceCounterInput): ScriptCall {
  return { keys: [a.counter], args: [a.token] };
}

export interface RestoreCounterInput extends Counter {
  /** The fence token this replay set. */
  token: string;
  cur: bigint;
  max: bigint;
  /** The new epoch, which lifts the fence. */
  epoch: number;
}

export function restoreCounterArgs(a: RestoreCounterInput): ScriptCall {
  return { keys: [a.counter], args: [a.token, a.cur.toString(), a.max.toString(), String(a.epoch)] };
}

export interface AcquireLeaseInput {
  sequence: string;
  token: string;
  ttlMs: number;
  /** 2^workerBits. */
  ids: number;
  /** The id tried first. */
  firstId: number;
  /** This holder's issued-until bound, Unix ms. */
  untilMs: number;
  /** Ids whose earlier bound is at most this are taken without looking further, Unix ms. */
  acceptMs: number;
}

export function acquireLeaseArgs(a: AcquireLeaseInput): ScriptCall {
  return {
    keys: [snowflakeUntilKey(a.sequence), snowflakeLeasePrefix(a.sequence)],
    args: [a.token, String(a.ttlMs), String(a.ids), String(a.firstId), String(a.untilMs), String(a.acceptMs)],
  };
}

export interface RenewLeaseInput {
  sequence: string;
  workerId: number;
  token: string;
  ttlMs: number;
  /** The holder's new issued-until bound, Unix ms. */
  untilMs: number;
}

export function renewLeaseArgs(a: RenewLeaseInput): ScriptCall {
  return {
    keys: [snowflakeLeaseKey(a.sequence, a.workerId), snowflakeUntilKey(a.sequence)],
    args: [a.token, String(a.ttlMs), String(a.workerId), String(a.untilMs)],
  };
}

export interface ReleaseLeaseInput {
  sequence: string;
  workerId: number;
  token: string;
  /** The id's bound from now on, Unix ms; null: keep the stored one. */
  finalMs: number | null;
}

export function releaseLeaseArgs(a: ReleaseLeaseInput): ScriptCall {
  return {
    keys: [snowflakeLeaseKey(a.sequence, a.workerId), snowflakeUntilKey(a.sequence)],
    args: [a.token, String(a.workerId), a.finalMs === null ? "" : String(a.finalMs)],
  };
}

export interface TakeOwnerInput {
  /** The request topic. */
  topic: string;
  partition: number;
  /** The caller's new random token. */
  token: string;
  /** The request topic's partition count the caller routes by. */
  partitions: number;
}

export function takeOwnerArgs(a: TakeOwnerInput): ScriptCall {
  return { keys: [ownerKey(a.topic, a.partition), routeKey(a.topic)], args: [a.token, String(a.partitions)] };
}

export interface RecordAnswersInput extends TakeOwnerInput {
  /** The owner token the caller took. */
  token: string;
  /** How long answers are kept, ms (0: not kept; ownership is still checked). */
  windowMs: number;
  answers: Answer[];
  /** Per snowflake sequence the batch answered, the largest id it answered. */
  highs: ReadonlyMap<string, bigint>;
}

export function recordAnswersArgs(a: RecordAnswersInput): ScriptCall {
  const keys = [ownerKey(a.topic, a.partition), routeKey(a.topic)];
  const args = [a.token, String(a.partitions), String(a.windowMs), String(a.answers.length)];
  for (const x of a.answers) {
    keys.push(answerKey(x.sequence, x.requestId));
    args.push(encodeAnswer(x.answer));
  }
  for (const [sequence, id] of a.highs) {
    keys.push(snowflakeHighKey(sequence));
    args.push(id.toString().padStart(19, "0")); // 19 digits: Lua compares them as strings
  }
  return { keys, args };
}
