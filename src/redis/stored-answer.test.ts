/** The dedupe store's encoding, without any service: an answer reads back as it was recorded. */
import { expect, test } from "vitest";
import { decodeAnswer, encodeAnswer } from "./stored-answer.js";

test("answers round-trip, with and without a period and an issue instant", () => {
  const answers = [
    { period: null, ranges: [{ first: 1n, last: 5n }] },
    { period: "20261124", ranges: [{ first: 9_007_199_254_740_991n, last: 9_007_199_254_740_991n }], at: 1_795_000_000_000 },
    { period: "2026", ranges: [], at: 0 },
  ];
  for (const a of answers) expect(decodeAnswer(encodeAnswer(a))).toEqual(a);
  expect(encodeAnswer({ period: "202611", ranges: [{ first: 1n, last: 2n }], at: 7 })).toBe('["202611",7,"1","2"]');
});
