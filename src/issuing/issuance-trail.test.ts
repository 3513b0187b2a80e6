import { expect, test } from "vitest";
import { IddError } from "../core/errors.js";
import type { IdRequest } from "../protocol/request.js";
import { defineSequence } from "../sequences/definition.js";
import { auditedRuns, writeTrail } from "./issuance-trail.js";
import type { Outcome } from "./outcome.js";

const r = (first: number, last: number) => ({ first: BigInt(first), last: BigInt(last) });
const at = new Date(0);
const def = defineSequence({ name: "inv" }, at);
const request = (sequence: string): IdRequest => ({ requestId: "x", sequence, count: 1, replyTo: null, deadline: null, fields: {} });
const issued = (period: string | null, ...ranges: ReturnType<typeof r>[]): Outcome => ({
  is: "issued",
  def,
  answer: { period, ranges },
  at: 0,
});

test("one record per run of consecutive numbers per counter, audited sequences only", () => {
  const requests = ["inv", "other", "inv", "inv", "inv", "inv", "inv"].map(request);
  const outcomes: Outcome[] = [
    issued("20260101", r(5, 5)),
    issued(null, r(1, 3)),
    { is: "deduped", def: undefined, answer: { period: "20260101", ranges: [r(3, 4)] }, at: 0 },
    issued("20260102", r(1, 1)),
    { is: "refused", error: new IddError("UNAVAILABLE", "x"), at: 0 },
    issued("20260101", r(9, 9)),
    { is: "settled", period: "20260101", ranges: [r(11, 11)], at: 0 },
  ];
  const { records, indexes } = auditedRuns(requests, outcomes, (s) => s === "inv", "w", at);
  expect(records.map((x) => [x.period, x.first, x.last])).toEqual([
    ["20260101", 3n, 5n],
    ["20260101", 9n, 9n],
    ["20260101", 11n, 11n],
    ["20260102", 1n, 1n],
  ]);
  expect(indexes).toEqual([0, 2, 3, 5, 6]);
});

test("answers that could not be recorded are refused UNAVAILABLE; others stay", async () => {
  const requests = [request("inv"), request("other")];
  const outcomes = [issued(null, r(1, 1)), issued(null, r(1, 1))];
  const failing = { worker: "w", append: () => Promise.reject(new Error("mongodb down")) };
  const lost = await writeTrail(failing, requests, outcomes, (s) => s === "inv", 0);
  expect(outcomes.map((x) => (x.is === "refused" ? x.error.code : x.is))).toEqual(["UNAVAILABLE", "issued"]);
  expect(lost.map((x) => [x.sequence, x.first])).toEqual([["inv", 1n]]);
});
