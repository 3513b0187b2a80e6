/**
 * `idd check` as a person meets it, run as a process; it needs no services: validates what was typed
 * (separators ignored, exit 0 valid / 1 invalid), computes a check with --compute, exits 2 on usage
 * errors, and its help lists every algorithm with the detection claims the unit tests verify.
 */
import { expect, test } from "vitest";
import { CHECK_ALGORITHMS, checkAlgorithm } from "../../src/sequences/check-digits.js";
import { runIdd as idd } from "../support/cli.js";

test("idd check: valid (0), invalid (1), --compute, usage errors (2), help lists the algorithms", async () => {
  const [valid, typo, orcid, formatted, computed, iban, unknown, missing, noDigits, help] = await Promise.all([
    idd(["check", "7992 7398 713", "--algorithm", "luhn"]),
    idd(["check", "7992 7398 731", "--algorithm", "luhn"]),
    idd(["check", "0000-0002-1694-233x", "--algorithm", "mod11-2"]),
    idd(["check", "INV-2611-0000013", "--algorithm", "damm"]),
    idd(["check", "7992739871", "--algorithm", "luhn", "--compute"]),
    idd(["check", "3214 2829 1234 5698 7654 3216 11", "--algorithm", "mod97-10", "--compute"]),
    idd(["check", "123", "--algorithm", "crc32"]),
    idd(["check", "123"]),
    idd(["check", "abc", "--algorithm", "damm", "--compute"]),
    idd(["check", "--help"]),
  ]);
  expect([valid.status, valid.stdout]).toEqual([0, "valid\n"]);
  expect([typo.status, typo.stdout]).toEqual([1, "invalid\n"]);
  expect([orcid.status, orcid.stdout]).toEqual([0, "valid\n"]);
  expect([formatted.status, formatted.stdout]).toEqual([0, "valid\n"]);
  expect([computed.status, computed.stdout]).toEqual([0, "3\n"]);
  expect([iban.status, iban.stdout]).toEqual([0, "82\n"]);
  expect(unknown.status).toBe(2);
  expect(unknown.stderr).toContain('idd: UNKNOWN_CHECK_ALGORITHM: unknown check-digit algorithm "crc32": use one of luhn, verhoeff');
  expect(missing.status).toBe(2);
  expect(missing.stderr).toContain("--algorithm");
  expect(noDigits.status).toBe(2);
  expect(help.status).toBe(0);
  for (const name of CHECK_ALGORITHMS) {
    const a = checkAlgorithm(name);
    const claims = [a.catchesAllSingleErrors, a.catchesAllAdjacentTranspositions].map((all) => (all ? "all" : "not all"));
    expect(help.stdout).toMatch(new RegExp(`^  ${name} +${claims[0]} +/ ${claims[1]} +${a.summary.replace(/[()*.]/g, "\\$&")}$`, "m"));
  }
}, 60_000);
