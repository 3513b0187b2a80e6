/**
 * The issuance trail of audited sequences (definition `audit`; `idd audit` reads it): once a batch's
 * answers are recorded under the gen, and before they go out, the numbers answered for
 * audited sequences are written to MongoDB's `issuance` in one insert: one record per run of
 * consecutive numbers per counter, so a batch of single numbers from one block is one record.
 * Answers sent again from the dedupe store are written again (their first write may have failed).
 * When the write fails, those requests are refused UNAVAILABLE and their numbers are given up, as
 * with a fenced batch (a retry with the same requestId gets them back, and is written then). Batches
 * without an audited sequence write nothing: no I/O per number, none at all for other sequences.
 */
import { IddError } from "../core/errors.js";
import type { Range } from "../core/range.js";
import type { IdRequest } from "../protocol/request.js";
import type { IssuanceRecord } from "../storage/issuance.js";
import { numbersOf, type Outcome, refusal } from "./outcome.js";

export interface IssuanceTrail {
  append(records: IssuanceRecord[]): Promise<void>;
  /** Who answered, as in the grant log. */
  worker: string;
}

/** The batch's answered runs of audited sequences, and the indexes of the outcomes they came from. */
export function auditedRuns(
  requests: readonly IdRequest[],
  outcomes: readonly Outcome[],
  audited: (sequence: string) => boolean,
  worker: string,
  at: Date,
): { records: IssuanceRecord[]; indexes: number[] } {
  const byCounter = new Map<string, { sequence: string; period: string | null; ranges: Range[] }>();
  const indexes: number[] = [];
  outcomes.forEach((o, i) => {
    const numbers = numbersOf(o);
    const { sequence } = requests[i] as IdRequest;
    if (!numbers || numbers.ranges.length === 0 || !audited(sequence)) return;
    indexes.push(i);
    const key = `${sequence}\u0000${numbers.period ?? ""}`;
    let c = byCounter.get(key);
    if (!c) {
      c = { sequence, period: numbers.period, ranges: [] };
      byCounter.set(key, c);
    }
    c.ranges.push(...numbers.ranges);
  });
  const records: IssuanceRecord[] = [];
  for (const c of byCounter.values()) {
    const sorted = c.ranges.sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
    let run: IssuanceRecord | undefined;
    for (const x of sorted) {
      if (run && x.first <= run.last + 1n) {
        if (x.last > run.last) run.last = x.last;
        continue;
      }
      run = { sequence: c.sequence, period: c.period, first: x.first, last: x.last, at, worker };
      records.push(run);
    }
  }
  return { records, indexes };
}

/**
 * Writes the batch's audited answers; the outcomes it could not write become UNAVAILABLE
 * refusals, and their runs are returned (their numbers are given up).
 */
export async function writeTrail(
  trail: IssuanceTrail | undefined,
  requests: readonly IdRequest[],
  outcomes: Outcome[],
  audited: (sequence: string) => boolean,
  now: number,
): Promise<IssuanceRecord[]> {
  if (!trail) return [];
  const { records, indexes } = auditedRuns(requests, outcomes, audited, trail.worker, new Date(now));
  if (records.length === 0) return [];
  try {
    await trail.append(records);
    return [];
  } catch (e) {
    const failure = new IddError("UNAVAILABLE", `answers of an audited sequence could not be recorded: ${(e as Error).message}`);
    for (const i of indexes) outcomes[i] = refusal(failure, now);
    return records;
  }
}
