/**
 * Property tests of the detection claims (check-digits.ts's header), on random payloads of 1 to 40
 * digits: each claim of true holds for every single substitution or adjacent transposition of the value.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { CHECK_ALGORITHMS, type CheckAlgorithm, checkAlgorithm } from "./check-digits.js";

const payloads = fc.string({ unit: fc.constantFrom(..."0123456789"), minLength: 1, maxLength: 40 });
const TRANSPOSITIONS = ["damm", "verhoeff", "mod11-2", "mod97-10"];

/** Every value one character away from `value`, at any position (an X too in mod11-2's check position). */
function substitutions(a: CheckAlgorithm, value: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < value.length; i++)
    for (const ch of a.name === "mod11-2" && i === value.length - 1 ? "0123456789X" : "0123456789")
      if (ch !== value[i]) out.push(value.slice(0, i) + ch + value.slice(i + 1));
  return out;
}

/** Every value with two adjacent distinct characters of `value` swapped. */
function transpositions(value: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < value.length; i++)
    if (value[i] !== value[i + 1]) out.push(value.slice(0, i) + value.charAt(i + 1) + value.charAt(i) + value.slice(i + 2));
  return out;
}

describe("check digits: property tests", () => {
  test("the claims are the ones tested here", () => {
    expect(CHECK_ALGORITHMS.filter((n) => checkAlgorithm(n).catchesAllAdjacentTranspositions)).toEqual(
      CHECK_ALGORITHMS.filter((n) => TRANSPOSITIONS.includes(n)),
    );
  });

  test.each(CHECK_ALGORITHMS.filter((n) => checkAlgorithm(n).catchesAllSingleErrors))("%s detects every single substitution", (name) => {
    const a = checkAlgorithm(name);
    fc.assert(
      fc.property(payloads, (payload) => {
        const value = payload + a.compute(payload);
        expect(a.validate(value)).toBe(true);
        for (const typo of substitutions(a, value)) expect(a.validate(typo), `${value} -> ${typo}`).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  test.each(TRANSPOSITIONS)("%s detects every adjacent transposition of distinct digits", (name) => {
    const a = checkAlgorithm(name);
    fc.assert(
      fc.property(payloads, (payload) => {
        const value = payload + a.compute(payload);
        for (const swapped of transpositions(value)) expect(a.validate(swapped), `${value} -> ${swapped}`).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});
