/**
 * The arguments of every script in lua/, built by one pure function each (bullmq's `…Args`
 * methods): KEYS and ARGV in the order the script's header lists them, every value as the string
 * Redis receives. Unit tests check them without Redis; `Scripts` sends them.
 */
import {
  answerKey,
  counterKey,
  fenceKey,
  genKey,
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

/** One (sequence, period) counter. */
export interface CounterRef {
  sequence: string;
  /** Null for sequences that never restart. */
  period: string | null;
}

export interface ClaimBlockInput extends CounterRef {
  /** Numbers wanted, at least 1. */
  size: number;
  /** The fence epoch the caller read. */
  epoch: string;
  /** Fresh per claim; sent again when the claim's answer never came, to get the same block. */
  claimId: string;
  /** The caller's gen for the sequence's home partition. */
  gen: number;
  /** The caller holds no block of the sequence under `gen`: a fence of another node (or none) may be taken over. */
  adopt: boolean;
  /** The claimant's id, kept with the claim so that the next claimer can name it. */
  worker: string;
  /** Whether the caller writes the block's grant before using it (strict grant log). */
  writeAhead: boolean;
  /** The caller's clock, Unix ms, kept with the claim. */
  atMs: number;
}

export function claimBlockArgs(a: ClaimBlockInput): ScriptCall {
  return {
    keys: [counterKey(a.sequence, a.period), fenceKey(a.sequence)],
    args: [
      String(a.size),
      a.epoch,
      a.claimId,
      String(a.gen),
      a.adopt ? "1" : "0",
      a.worker,
      a.writeAhead ? "s" : "r",
      String(Math.floor(a.atMs)),
    ],
  };
}

export interface RaiseMaxInput extends CounterRef {
  max: bigint;
  epoch: string;
}

export function raiseMaxArgs(a: RaiseMaxInput): ScriptCall {
  return { keys: [counterKey(a.sequence, a.period)], args: [a.max.toString(), a.epoch] };
}

export interface InitCounterInput extends CounterRef {
  /** start - 1. */
  cur: bigint;
  /** The reservation MongoDB holds. */
  max: bigint;
  epoch: string;
}

export function initCounterArgs(a: InitCounterInput): ScriptCall {
  return { keys: [counterKey(a.sequence, a.period)], args: [a.cur.toString(), a.max.toString(), a.epoch] };
}

/** Replay's fence tokens start so; workers wait on such a fence and never take it over (lua/fenceCounter-1.lua). */
export const REPLAY_FENCE = "replay:";

export interface FenceCounterInput extends CounterRef {
  /** The fence token, unique per restore. */
  token: string;
  /** Fence only a counter that is missing or suspect (a worker's automatic restore). */
  onlySuspect?: boolean;
  /**
   * Or: that is missing, suspect, or still holds this epoch, one MongoDB knows a restore on another
   * Redis superseded (a counter left on a lost timeline: a worker's automatic restore).
   */
  orStaleEpoch?: number;
}

export function fenceCounterArgs(a: FenceCounterInput): ScriptCall {
  const mode = a.orStaleEpoch !== undefined ? `stale:${a.orStaleEpoch}` : a.onlySuspect ? "1" : "";
  return { keys: [counterKey(a.sequence, a.period)], args: [a.token, mode] };
}

export interface RestoreCounterInput extends CounterRef {
  /** The fence token this restore set. */
  token: string;
  cur: bigint;
  max: bigint;
  /** The new epoch, which lifts the fence. */
  epoch: number;
}

export function restoreCounterArgs(a: RestoreCounterInput): ScriptCall {
  return { keys: [counterKey(a.sequence, a.period)], args: [a.token, a.cur.toString(), a.max.toString(), String(a.epoch)] };
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
  /**
   * What the sequence's state missing in Redis means: lost (the default: hold off), ask (answer
   * Redis's time and node, lease nothing), or new: MongoDB recorded this caller's first lease, so no
   * hold-off while Redis is `node` and its time at most `untilRedisMs` (design §5.6).
   */
  missing?: "lost" | "ask" | { node: string; untilRedisMs: number };
}

export function acquireLeaseArgs(a: AcquireLeaseInput): ScriptCall {
  const m = a.missing ?? "lost";
  const mode = typeof m === "string" ? [m] : ["new", m.node, String(m.untilRedisMs)];
  return {
    keys: [snowflakeUntilKey(a.sequence), snowflakeLeasePrefix(a.sequence)],
    args: [a.token, String(a.ttlMs), String(a.ids), String(a.firstId), String(a.untilMs), String(a.acceptMs), ...mode],
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

/** A gen taken after the gen key's node changed is this much (µs) ahead of Redis time (docs/design.md I3). */
export const GEN_MARGIN_US = 60_000_000;

export interface TakeOwnerInput {
  /** The request topic. */
  topic: string;
  /** The request topic's partition count the caller routes by. */
  partitions: number;
}

export function takeOwnerArgs(a: TakeOwnerInput): ScriptCall {
  return { keys: [genKey(a.topic), routeKey(a.topic)], args: [String(a.partitions), String(GEN_MARGIN_US)] };
}

export interface FenceSnowflakeInput {
  sequence: string;
  gen: number;
}

export function fenceSnowflakeArgs(a: FenceSnowflakeInput): ScriptCall {
  return { keys: [fenceKey(a.sequence), snowflakeHighKey(a.sequence)], args: [String(a.gen)] };
}

/** One sequence's part of a recordAnswers call. */
export interface SequenceAnswers {
  sequence: string;
  /** Answers of this sequence only. */
  answers: Answer[];
  /** For a snowflake sequence, the largest id the batch answered. */
  high?: bigint;
}

export interface RecordAnswersInput {
  /** The gen the caller's blocks (or snowflake fences) were taken under. */
  gen: number;
  /** How long answers are kept, ms (0: not kept; the fences are still checked). */
  windowMs: number;
  /** One or more sequences: recorded all or none (on a Redis Cluster, one per call: their keys are of one slot). */
  sequences: SequenceAnswers[];
}

export function recordAnswersArgs(a: RecordAnswersInput): ScriptCall {
  const keys: string[] = [];
  const args = [String(a.gen), String(a.windowMs)];
  for (const s of a.sequences) {
    keys.push(fenceKey(s.sequence), snowflakeHighKey(s.sequence));
    // 19 digits: Lua compares them as strings
    args.push(String(s.answers.length), s.high === undefined ? "" : s.high.toString().padStart(19, "0"));
    for (const x of s.answers) {
      if (x.sequence !== s.sequence) throw new Error(`recordAnswers for ${s.sequence} was given an answer of ${x.sequence}`);
      keys.push(answerKey(x.sequence, x.requestId));
      args.push(encodeAnswer(x.answer));
    }
  }
  return { keys, args };
}
