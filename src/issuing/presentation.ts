/**
 * Replies as the client reads them. Numbers: the kind prints them (up to maxFormatted numbers), the
 * same for an answer issued now and one sent again from the dedupe store. Failures: a stable code;
 * codes not meant for clients (src/core/errors.ts) and connection failures become UNAVAILABLE (G3: an explicit error, never a guess).
 */
import { IddError, isIddError, isReplyCode } from "../core/errors.js";
import { type IdReply, okReply } from "../protocol/reply.js";
import type { IdRequest } from "../protocol/request.js";
import type { StoredAnswer } from "../redis/stored-answer.js";
import type { IssueLimits, KindContext } from "../sequences/kinds/kind.js";
import { kindOf } from "../sequences/kinds/table.js";
import type { SequenceDef } from "../sequences/sequence-def.js";

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
