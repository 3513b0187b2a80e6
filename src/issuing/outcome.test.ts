/** Outcomes as replies and counts, without any service: each kind of outcome, and what the counters count. */
import { expect, test } from "vitest";
import { IddError } from "../core/errors.js";
import type { IdRequest } from "../protocol/request.js";
import { defineSequence } from "../sequences/definition.js";
import { type Outcome, present, refusal, tally } from "./outcome.js";

const at = Date.parse("2026-11-24T10:00:00Z");
const r = (first: number, last: number) => ({ first: BigInt(first), last: BigInt(last) });
const request = (more: Partial<IdRequest> = {}): IdRequest => ({
  requestId: "r",
  sequence: "inv",
  count: 2,
  replyTo: null,
  deadline: null,
  fields: {},
  ...more,
});
const ctx = {};
const limits = { maxFormatted: 10 };
const fmt = defineSequence({ name: "inv", kind: "formatted", format: "INV-{seq:4}" }, new Date(at));

test("issued and deduped numbers are printed by the kind; a deduped answer without a definition keeps its numbers", () => {
  const issued = present(request(), { is: "issued", def: fmt, answer: { period: null, ranges: [r(7, 8)], at }, at }, ctx, limits);
  expect(issued).toMatchObject({ status: "OK", ranges: [r(7, 8)], formatted: ["INV-0007", "INV-0008"], issuedAt: BigInt(at) });
  const again = present(request(), { is: "deduped", def: fmt, answer: { period: null, ranges: [r(7, 8)], at }, at: at + 5 }, ctx, limits);
  expect(again).toMatchObject({ formatted: ["INV-0007", "INV-0008"], issuedAt: BigInt(at + 5) });
  const bare = present(request(), { is: "deduped", def: undefined, answer: { period: "x", ranges: [r(1, 1)] }, at }, ctx, limits);
  expect(bare).toMatchObject({ status: "OK", period: "x", ranges: [r(1, 1)], formatted: [] });
});

test("a refusal is an error reply with its code; settled numbers are an OK reply without prints", () => {
  const refused = present(request(), refusal(new IddError("DEADLINE_EXCEEDED", "late"), at), ctx, limits);
  expect(refused).toMatchObject({ status: "ERROR", ranges: [], error: { code: "DEADLINE_EXCEEDED", message: "late" } });
  const settled = present(request(), { is: "settled", period: null, ranges: [r(3, 3)], at }, ctx, limits);
  expect(settled).toMatchObject({ status: "OK", ranges: [r(3, 3)], formatted: [], error: null });
});

test("the counters count numbers issued now, answers sent again and missed deadlines; nothing else", () => {
  const requests = [request({ count: 3 }), request({ count: 4 }), request(), request(), request()];
  const outcomes: Outcome[] = [
    { is: "issued", def: fmt, answer: { period: null, ranges: [r(1, 3)] }, at },
    { is: "deduped", def: fmt, answer: { period: null, ranges: [r(4, 7)] }, at },
    { is: "settled", period: null, ranges: [r(9, 9)], at },
    refusal(new IddError("DEADLINE_EXCEEDED", "late"), at),
    refusal(new IddError("UNAVAILABLE", "down"), at),
  ];
  expect(tally(requests, outcomes)).toEqual({ numbers: 3, deduped: 1, expired: 1 });
});
