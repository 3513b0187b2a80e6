/**
 * The dedupe store and the fenced record (G2, G6; docs/design.md I3). A batch's answers are recorded
 * in one script call (lua/recordAnswers-n.lua; several for a step of over 4,096 keys, one per
 * sequence on a Redis Cluster), only while each sequence's fence still holds the gen of the
 * partition's lease (src/ownership/): a worker that another issuer superseded records and publishes
 * nothing. Recorded answers double as the dedupe
 * store: a repeated requestId gets the recorded numbers back, from whichever worker answers it.
 */
import { isIddError } from "../core/errors.js";
import type { RedisClient } from "../redis/client-type.js";
import { answerKey } from "../redis/keys.js";
import { Scripts } from "../redis/scripts.js";
import { type Answer, decodeAnswer, type StoredAnswer } from "../redis/stored-answer.js";

export class AnswerRecorder {
  readonly #redis: RedisClient;
  readonly #scripts: Scripts;
  /** How long recorded answers are kept for retries (IDD_DEDUPE_WINDOW_MS); 0: dedupe off. */
  readonly #windowMs: number;

  constructor(redis: RedisClient, windowMs: number) {
    this.#redis = redis;
    this.#scripts = new Scripts(redis);
    this.#windowMs = windowMs;
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
   * Records a batch's answers under `gen` for every sequence of `sequences` (each one the batch
   * issued numbers of, with or without answers to keep): one script call, which records all of
   * them or none (several, sent together, for a step of over CALL_KEYS keys; on a Redis Cluster one
   * per sequence, as a call's keys are of one slot). `highs`: the largest snowflake id answered per snowflake sequence (the next issuer
   * issues above it). Returns, per answer, the one recorded earlier for the same requestId (to be
   * sent instead) or undefined. Throws WORKER_FENCED when any sequence's fence is not `gen` (the
   * caller revokes its lease, src/ownership/).
   */
  async record(
    gen: number,
    sequences: Iterable<string>,
    answers: Answer[],
    highs: ReadonlyMap<string, bigint> = new Map(),
  ): Promise<(StoredAnswer | undefined)[]> {
    const bySequence = groupBy(answers, (a) => a.sequence);
    for (const s of sequences) if (!bySequence.has(s)) bySequence.set(s, []);
    const out: (StoredAnswer | undefined)[] = answers.map(() => undefined);
    const all = [...bySequence];
    const groups = this.#redis.isCluster ? all.map((s) => [s]) : filled(all, ([, at]) => 2 + at.length, CALL_KEYS);
    const calls = groups.map(async (group) => {
      const recorded = await this.#scripts.recordAnswers({
        gen,
        windowMs: this.#windowMs,
        sequences: group.map(([sequence, at]) => {
          const high = highs.get(sequence);
          return { sequence, answers: at.map((i) => answers[i] as Answer), ...(high !== undefined && { high }) };
        }),
      });
      // In the call's order: each sequence's answers in turn.
      let k = 0;
      for (const [, at] of group) for (const i of at) out[i] = recorded[k++];
    });
    const results = await Promise.allSettled(calls);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) {
      const fenced = results.find((r): r is PromiseRejectedResult => r.status === "rejected" && isIddError(r.reason, "WORKER_FENCED"));
      if (fenced) throw fenced.reason;
      throw failed.reason;
    }
    return out;
  }
}

/**
 * Keys one call names at most (a sequence's fence and high mark, and one per answer): Redis runs a
 * script to its end, so a step far larger than the default (IDD_STEP_RECORDS up to 100,000) goes in
 * several calls, and the other workers' commands are served between them.
 */
const CALL_KEYS = 4096;

/** `xs` in order, in groups whose sizes add up to at most `most` (one that alone is larger goes alone). */
function filled<T>(xs: readonly T[], size: (x: T) => number, most: number): T[][] {
  const out: T[][] = [];
  let group: T[] = [];
  let n = 0;
  for (const x of xs) {
    const k = size(x);
    if (group.length > 0 && n + k > most) {
      out.push(group);
      group = [];
      n = 0;
    }
    group.push(x);
    n += k;
  }
  if (group.length > 0) out.push(group);
  return out;
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
