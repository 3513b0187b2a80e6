/**
 * What an IdClient returns (id-client.ts): a reply as a result (its numbers expanded), or the
 * error reply as an IddError with its stable code; and the JSON fields of a CONFIRM or VOID.
 */
import { type ErrorCode, ErrorCodes, IddError } from "../core/errors.js";
import type { Range } from "../core/range.js";
import type { IdReply } from "../protocol/reply.js";

export interface IdResult {
  requestId: string;
  sequence: string;
  period: string | null;
  ranges: Range[];
  /** The numbers, expanded from the ranges (fine for small counts). */
  numbers: bigint[];
  /** The numbers as the sequence formats them, one per number; empty for unformatted sequences. */
  formatted: string[];
  /** The sequence formats numbers, but the reply had more than idd formats at once: use the ranges. */
  formattedOmitted: boolean;
}

/** Where a CONFIRM or VOID goes besides its sequence: the period of its numbers (sequences that restart). */
export interface SettleOptions {
  period?: string | null;
  requestId?: string;
  timeoutMs?: number;
}

/** The JSON fields of a CONFIRM or VOID, numbers as exact digits. */
export function settleJson(s: { action: string; numbers: bigint[]; reason: string | null; period: string | null }): string {
  return `,"action":"${s.action}","numbers":[${s.numbers.join(",")}],"reason":${JSON.stringify(s.reason)},"period":${JSON.stringify(s.period)}`;
}

/** An OK reply as a result; an error reply as an IddError with its code. */
export function resultOf(r: IdReply): IdResult {
  if (r.status !== "OK") {
    const code = (r.error?.code ?? "INTERNAL") as ErrorCode;
    throw new IddError(code in ErrorCodes ? code : "INTERNAL", r.error?.message ?? "error reply");
  }
  const numbers = r.ranges.flatMap((x) => Array.from({ length: Number(x.last - x.first + 1n) }, (_, i) => x.first + BigInt(i)));
  // Replies of an older idd have neither formatted nor formattedOmitted.
  const { requestId: id, period, ranges, formatted = [], formattedOmitted = false } = r;
  return { requestId: id, sequence: r.sequence, period, ranges, numbers, formatted, formattedOmitted };
}
