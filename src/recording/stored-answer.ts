/**
 * An answer as the dedupe store keeps it (G6): the period and the numbers one request was given,
 * and when. A retry of the request gets exactly this back, from whichever worker answers it.
 */
import type { Range } from "../protocol/reply.js";

export interface StoredAnswer {
  period: string | null;
  ranges: Range[];
  /** When the numbers were issued (formatted strings print it); absent in answers of older workers. */
  at?: number;
}

/** One request's answer, to be recorded under its (sequence, requestId). */
export interface Answer {
  sequence: string;
  requestId: string;
  answer: StoredAnswer;
}

/** `JSON.stringify([period, at, "first", "last", …])`, written directly (one per request). */
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
