import { expect, test } from "vitest";
import { IddError } from "../core/errors.js";
import { errorReply, okReply } from "../protocol/reply.js";
import { auditedRuns, writeTrail } from "./issuance-trail.js";

const r = (first: number, last: number) => ({ first: BigInt(first), last: BigInt(last) });
const at = new Date(0);

test("one record per run of consecutive numbers per counter, audited sequences only", () => {
  const replies = [
    okReply("a", "inv", "20260101", [r(5, 5)], 0),
    okReply("b", "other", null, [r(1, 3)], 0),
    okReply("c", "inv", "20260101", [r(3, 4)], 0),
    okReply("d", "inv", "20260102", [r(1, 1)], 0),
    errorReply("e", "inv", new IddError("UNAVAILABLE", "x"), 0),
    okReply("f", "inv", "20260101", [r(9, 9)], 0),
  ];
  const { records, indexes } = auditedRuns(replies, (s) => s === "inv", "w", at);
  expect(records.map((x) => [x.period, x.first, x.last])).toEqual([
    ["20260101", 3n, 5n],
    ["20260101", 9n, 9n],
    ["20260102", 1n, 1n],
  ]);
  expect(indexes).toEqual([0, 2, 3, 5]);
});

test("answers that could not be recorded become UNAVAILABLE; others stay", async () => {
  const replies = [okReply("a", "inv", null, [r(1, 1)], 0), okReply("b", "other", null, [r(1, 1)], 0)];
  const failing = { worker: "w", append: () => Promise.reject(new Error("mongodb down")) };
  await writeTrail(failing, replies, (s) => s === "inv", 0);
  expect(replies.map((x) => x.error?.code ?? "OK")).toEqual(["UNAVAILABLE", "OK"]);
});
