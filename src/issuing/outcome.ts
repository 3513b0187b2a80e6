/**
 * What became of one request of a batch (dispenser.ts): issued now, sent again from the dedupe
 * store, settled (a gapless CONFIRM or VOID), refused with a stable code, or left for its number
 * source to answer with the batch's others. The dispenser's phases each replace outcomes by later ones; `present` turns the
 * final ones into replies as the client reads them, and the counts, the hooks and the issuance
 * trail read them. Numbers: the kind prints them (up to maxFormatted numbers), the same for an
 * answer issued now and one sent again from the dedupe store. Failures: a stable code; codes not
 * meant for clients (src/core/errors.ts) and connection failures become UNAVAILABLE (G3: an
 * explicit error, never a guess). Pure.
 */
import { IddError, isIddError, isReplyCode } from "../core/errors.js";
import type { Range } from "../core/range.js";
import { errorReply, type IdReply, okReply } from "../protocol/reply.js";
import type { IdRequest } from "../protocol/request.js";
import type { StoredAnswer } from "../redis/stored-answer.js";
import type { IssueLimits, KindContext, SourceName } from "../sequences/kinds/kind.js";
import { kindOf } from "../sequences/kinds/table.js";
import type { SequenceDef } from "../sequences/sequence-def.js";

/** Each outcome carries `at`, when it was decided: the reply's issuedAt. */
export type Outcome =
  /** Numbers taken now; recorded under the gen when the request has a requestId (G6). */
  | { readonly is: "issued"; readonly def: SequenceDef; readonly answer: StoredAnswer; readonly at: number }
  /** An answer recorded earlier for the requestId (G6); printed without a definition only when none is cached. */
  | { readonly is: "deduped"; readonly def: SequenceDef | undefined; readonly answer: StoredAnswer; readonly at: number }
  /** Numbers a CONFIRM or VOID settled: not issued by this request. */
  | { readonly is: "settled"; readonly period: string | null; readonly ranges: Range[]; readonly at: number }
  | { readonly is: "refused"; readonly error: IddError; readonly at: number }
  /** Left by its number source's `take` for the source's `finish` (a gapless ISSUE, CONFIRM or VOID). */
  | { readonly is: "later"; readonly source: SourceName; readonly def: SequenceDef; readonly period: string | null; readonly at: number };

export type Final = Exclude<Outcome, { is: "later" }>;

export const refusal = (error: IddError, at: number): Extract<Outcome, { is: "refused" }> => ({ is: "refused", error, at });

/** The numbers an outcome hands out, with their counter's period: none for a refusal. */
export function numbersOf(o: Outcome): { period: string | null; ranges: readonly Range[] } | undefined {
  if (o.is === "issued" || o.is === "deduped") return o.answer;
  if (o.is === "settled") return o;
  return undefined;
}

/** The reply the client reads for a final outcome: numbers as the kind prints them, or the error. */
export function present(request: IdRequest, o: Final, ctx: KindContext, limits: IssueLimits): IdReply {
  const { requestId, sequence } = request;
  switch (o.is) {
    case "refused":
      return errorReply(requestId, sequence, o.error, o.at);
    case "settled":
      return okReply(requestId, sequence, o.period, o.ranges, o.at);
    case "deduped":
      if (!o.def) return okReply(requestId, sequence, o.answer.period, o.answer.ranges, o.at);
      return presented(o.def, request, o.answer, o.at, ctx, limits);
    case "issued":
      return presented(o.def, request, o.answer, o.at, ctx, limits);
  }
}

/** What a batch answered, for the dispenser's counters: numbers issued, answers sent again, deadlines missed. */
export function tally(requests: readonly IdRequest[], outcomes: readonly Outcome[]): { numbers: number; deduped: number; expired: number } {
  const t = { numbers: 0, deduped: 0, expired: 0 };
  outcomes.forEach((o, i) => {
    if (o.is === "issued") t.numbers += (requests[i] as IdRequest).count;
    else if (o.is === "deduped") t.deduped++;
    else if (o.is === "refused" && o.error.code === "DEADLINE_EXCEEDED") t.expired++;
  });
  return t;
}

/** Maps any failure while issuing numbers to a reply error: codes not meant for replies become UNAVAILABLE. */
export function failureOf(e: unknown): IddError {
  if (isIddError(e)) {
    // Only codes meant for clients travel in replies (src/core/errors.ts); the rest are issuing's own business.
    return isReplyCode(e.code) ? e : new IddError("UNAVAILABLE", e.message);
  }
  // Connection failures of Redis or MongoDB: G3 says an explicit error, never a guess.
  return new IddError("UNAVAILABLE", e instanceof Error ? e.message : String(e));
}

/** The reply for issued numbers: the kind prints them, unless the request asked for more than maxFormatted. */
export function presented(
  def: SequenceDef,
  request: IdRequest,
  answer: StoredAnswer,
  now: number,
  ctx: KindContext,
  limits: IssueLimits,
): IdReply {
  const kind = kindOf(def);
  const issued = { ranges: answer.ranges, at: answer.at ?? now };
  const omitted = kind.prints && request.count > limits.maxFormatted;
  const formatted = omitted ? [] : kind.present(def, issued, request, ctx);
  return okReply(request.requestId, request.sequence, answer.period, answer.ranges, now, formatted, omitted);
}
