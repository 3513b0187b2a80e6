/**
 * How an answer is stored in Redis for the dedupe window (lua/recordAnswers-n.lua keeps it as an
 * opaque string): `JSON.stringify([period, at, "first", "last", …])`, numbers as strings because
 * they exceed a double's 2^53.
 */
import type { Range } from "../core/range.js";

export interface StoredAnswer {
  period: string | null;
  ranges: Range[];
  /** When the numbers were issued (formatted strings print it); absent in answers of older workers. */
  at?: number;
}

/** One answer to record: the request it answers and what it answered. */
export interface Answer {
  sequence: string;
  requestId: string;
  answer: StoredAnswer;
}

/** The stored form, written directly (one per request, so no intermediate array). */
export function encodeAnswer(a: StoredAnswer): string {
  let out = a.period === null ? "[null" : `[${JSON.stringify(a.period)}`;
  if (a.at !== undefined) out += `,${a.at}`;
  for (const r of a.ranges) out += `,"${r.first}","${r.last}"`;
  return `${out}]`;
}

export function decodeAnswer(s: string): StoredAnswer {
  const [period, ...rest] = JSON.parse(s) as [string | null, ...(string | number)[]];
  const at = typeof rest[0] === "number" ? (rest.shift() as number) : undefined;
  const ranges: Range[] = [];
  for (let i = 0; i < rest.length; i += 2) ranges.push({ first: BigInt(rest[i] as string), last: BigInt(rest[i + 1] as string) });
  return { period, ranges, ...(at !== undefined && { at }) };
}
