/**
 * IdReply values and their encoding: Avro (Confluent-framed, reply schema id registered at
 * start-up) for Avro requests, JSON for JSON requests. JSON numbers are written as exact digits,
 * also above 2^53.
 */
import type { IddError } from "../core/errors.js";
import type { Range } from "../core/range.js";
import { frame, replyType } from "./avro.js";
import type { WireFormat } from "./request.js";

export type { Range };

export interface IdReply {
  requestId: string;
  sequence: string;
  period: string | null;
  status: "OK" | "ERROR";
  ranges: Range[];
  formatted: string[];
  /** The sequence formats numbers, but this reply has more than idd formats in one reply. */
  formattedOmitted: boolean;
  error: { code: string; message: string } | null;
  issuedAt: bigint;
}

/** Subject the reply schema is registered under (reply topics vary, so the record name names it). */
export const REPLY_SUBJECT = "idd.v1.IdReply";

export function okReply(
  requestId: string,
  sequence: string,
  period: string | null,
  ranges: Range[],
  now: number,
  formatted: string[] = [],
  formattedOmitted = false,
): IdReply {
  return { requestId, sequence, period, status: "OK", ranges, formatted, formattedOmitted, error: null, issuedAt: BigInt(now) };
}

export function errorReply(requestId: string, sequence: string, error: IddError, now: number): IdReply {
  return {
    requestId,
    sequence,
    period: null,
    status: "ERROR",
    ranges: [],
    formatted: [],
    formattedOmitted: false,
    error: { code: error.code, message: error.message },
    issuedAt: BigInt(now),
  };
}

export function encodeReply(reply: IdReply, format: WireFormat, replySchemaId: number): Buffer {
  if (format === "avro") return frame(replySchemaId, replyType, reply);
  return Buffer.from(replyJson(reply), "utf8");
}

const str = JSON.stringify as (s: string) => string;

/** `toJson(reply)`, written directly (the hot path: one per request). */
export function replyJson(r: IdReply): string {
  const ranges = r.ranges.map((x) => `{"first":${x.first},"last":${x.last}}`).join(",");
  const error = r.error === null ? "null" : `{"code":${str(r.error.code)},"message":${str(r.error.message)}}`;
  return (
    `{"requestId":${str(r.requestId)},"sequence":${str(r.sequence)},"period":${r.period === null ? "null" : str(r.period)},` +
    `"status":"${r.status}","ranges":[${ranges}],"formatted":[${r.formatted.map(str).join(",")}],"formattedOmitted":${r.formattedOmitted},"error":${error},"issuedAt":${r.issuedAt}}`
  );
}

/** JSON with BigInt written as plain digits. */
export function toJson(v: unknown): string {
  const marks: string[] = [];
  const text = JSON.stringify(v, (_k, x) => {
    if (typeof x !== "bigint") return x;
    marks.push(x.toString());
    return `\u0000${marks.length - 1}\u0000`;
  });
  return text.replace(/"\\u0000(\d+)\\u0000"/g, (_m, i: string) => marks[Number(i)] as string);
}

/** Parses JSON, reading integers beyond 2^53 exactly (as BigInt) in `ranges`. */
export function replyFromJson(text: string): IdReply {
  const exact = text.replace(/"(first|last)":(-?\d+)/g, '"$1":"$2"').replace(/"issuedAt":(\d+)/, '"issuedAt":"$1"');
  const o = JSON.parse(exact) as IdReply & { ranges: { first: string; last: string }[]; issuedAt: string };
  return { ...o, ranges: o.ranges.map((r) => ({ first: BigInt(r.first), last: BigInt(r.last) })), issuedAt: BigInt(o.issuedAt) };
}
