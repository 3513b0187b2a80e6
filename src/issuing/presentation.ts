/**
 * Replies as the client reads them. Numbers: the kind prints them (up to maxFormatted numbers), the
 * same for an answer issued now and one sent again from the dedupe store. Failures: a stable code;
 * Redis's internal codes and connection failures become UNAVAILABLE (G3: an explicit error, never a guess).
 */
import { type ErrorCode, IddError, isIddError } from "../errors.js";
import { type IdReply, okReply } from "../protocol/reply.js";
import type { IdRequest } from "../protocol/request.js";
import type { StoredAnswer } from "../redis/stored-answer.js";
import type { IssueLimits, KindContext } from "../sequences/kinds/kind.js";
import { kindOf } from "../sequences/kinds/table.js";
import type { SequenceDef } from "../sequences/sequence-def.js";

/** The REDIS_* codes a reply keeps; the other REDIS_* codes are internal and become UNAVAILABLE. */
const KEPT_REDIS_CODES = new Set<string>(["REDIS_STATE_MISSING", "REDIS_STATE_LOST", "REDIS_FENCED"]);

/** Maps any failure while issuing numbers to a reply error. */
export function failureOf(e: unknown): IddError {
  if (isIddError(e)) {
    const code = KEPT_REDIS_CODES.has(e.code) || !e.code.startsWith("REDIS_") ? e.code : "UNAVAILABLE";
    return code === e.code ? e : new IddError(code as ErrorCode, e.message);
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
