import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { isIddError } from "../core/errors.js";
import { CHECK_ALGORITHMS, type CheckAlgorithm, type CheckAlgorithmName, checkAlgorithm, typedValueDigits } from "./check-digits.js";

/** Published examples: [payload, check characters, where it comes from]. */
const VECTORS: Record<CheckAlgorithmName, [string, string, string][]> = {
  luhn: [
    ["7992739871", "3", "Wikipedia, Luhn algorithm"],
    ["411111111111111", "1", "Visa test card 4111 1111 1111 1111"],
    ["4992739871", "6", "Rosetta Code, Luhn test: 49927398716 is valid"],
    ["123456781234567", "0", "Rosetta Code, Luhn test: 1234567812345670 is valid"],
    ["1234", "4", "cdigit README"],
  ],
  verhoeff: [
    ["236", "3", "Wikipedia, Verhoeff algorithm"],
    ["12345", "1", "Rosetta Code, Verhoeff algorithm"],
    ["123456789012", "0", "Rosetta Code, Verhoeff algorithm"],
    ["1234", "0", "cdigit README"],
  ],
  damm: [
    ["572", "4", "Wikipedia, Damm algorithm"],
    ["11294", "6", "Rosetta Code, Damm algorithm: 112946 is valid"],
    ["1234", "0", "cdigit README"],
  ],
  "mod11-2": [
    ["000000021825009", "7", "ORCID 0000-0002-1825-0097"],
    ["000000021694233", "X", "ORCID 0000-0002-1694-233X"],
    ["11010519491231002", "X", "GB 11643-1999 example resident ID 11010519491231002X"],
    ["0794", "0", "ISO/IEC 7064 example"],
    ["1234", "4", "cdigit README"],
  ],
  "mod97-10": [
    ["794", "44", "ISO/IEC 7064 example"],
    // IBAN GB82 WEST 1234 5698 7654 32: BBAN, then GB as digits (G=16, B=11); the check is "82".
    ["32142829123456987654321611", "82", "IBAN GB82WEST12345698765432"],
    ["1234", "82", "cdigit README"],
  ],
  jd31: [
    ["1", "9", "1 * 9 % 31 % 10"],
    ["123456789", "8", "123456789 * 9 = 1111111101; % 31 = 28; % 10 = 8"],
  ],
};

/** Independent definitions, straight from each standard's formula (BigInt or weights), for random payloads. */
const ORACLES: Partial<Record<CheckAlgorithmName, (payload: string, check: string) => boolean>> = {
  luhn: (p, c) =>
    [...`${p}${c}`].reverse().reduce((sum, ch, i) => {
      const d = Number(ch) * (i % 2 === 1 ? 2 : 1);
      return sum + (d > 9 ? d - 9 : d);
    }, 0) %
      10 ===
    0,
  // Σ a_i · 2^(i-1) ≡ 1 (mod 11), positions counted from the right with the check character at 1.
  "mod11-2": (p, c) =>
    [...`${p}${c}`].reverse().reduce((sum, ch, i) => (sum + (ch === "X" ? 10 : Number(ch)) * Number(2n ** BigInt(i) % 11n)) % 11, 0) === 1,
  "mod97-10": (p, c) => BigInt(`${p}${c}`) % 97n === 1n,
  jd31: (p, c) => String(((BigInt(p || "0") * 9n) % 31n) % 10n) === c,
};

/** A small seeded generator, so a failure reproduces. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every payload of 1 to 4 digits, then 1,000 random ones of each longer length (up to 40 digits). */
function payloads(): string[] {
  const all: string[] = [];
  for (let len = 1; len <= 4; len++) for (let n = 0; n < 10 ** len; n++) all.push(String(n).padStart(len, "0"));
  const next = random(20261122);
  for (const len of [5, 7, 12, 19, 40])
    for (let k = 0; k < 1000; k++) all.push(Array.from({ length: len }, () => Math.floor(next() * 10)).join(""));
  return all;
}
const PAYLOADS = payloads();

interface Missed {
  count: number;
  example?: string;
}

/** Tries every single substitution and every adjacent transposition of payload + check; counts the undetected ones. */
function bruteForce(a: CheckAlgorithm): { singles: Missed; transpositions: Missed; checked: number } {
  const singles: Missed = { count: 0 };
  const transpositions: Missed = { count: 0 };
  let checked = 0;
  for (const payload of PAYLOADS) {
    const value = payload + a.compute(payload);
    if (!a.validate(value)) throw new Error(`${a.name}: ${value} does not validate`);
    for (let i = 0; i < value.length; i++) {
      const alphabet = a.name === "mod11-2" && i === value.length - 1 ? "0123456789X" : "0123456789";
      for (const ch of alphabet) {
        if (ch === value[i]) continue;
        const typo = value.slice(0, i) + ch + value.slice(i + 1);
        checked++;
        if (a.validate(typo)) {
          singles.count++;
          singles.example ??= `${value} -> ${typo}`;
        }
      }
      const [x, y] = [value[i], value[i + 1]];
      if (y === undefined || x === y) continue;
      const swapped = value.slice(0, i) + y + x + value.slice(i + 2);
      checked++;
      if (a.validate(swapped)) {
        transpositions.count++;
        transpositions.example ??= `${value} -> ${swapped}`;
      }
    }
  }
  return { singles, transpositions, checked };
}

describe.each(CHECK_ALGORITHMS)("%s", (name) => {
  const a = checkAlgorithm(name);

  test("published test vectors", () => {
    for (const [payload, check, source] of VECTORS[name]) {
      expect(a.compute(payload), source).toBe(check);
      expect(a.validate(payload + check), source).toBe(true);
      expect(check).toHaveLength(a.width);
    }
  });

  test("agrees with the standard's formula on random payloads", () => {
    const oracle = ORACLES[name];
    if (!oracle) return; // verhoeff and damm are their tables: the vectors and the brute force below check them
    for (const p of PAYLOADS.filter((_, i) => i % 7 === 0)) expect(oracle(p, a.compute(p)), p).toBe(true);
  });

  test("malformed values do not validate; non-digit payloads do not compute", () => {
    expect(a.validate("")).toBe(false);
    expect(a.validate("1".repeat(a.width))).toBe(false); // no payload
    const good = `12a4${a.compute("124")}`;
    expect(a.validate(good)).toBe(false);
    expect(a.validate(`${"124"}${a.compute("124")}`)).toBe(true);
    expect(() => a.compute("12-4")).toThrow(TypeError);
  });

  // These claims are printed in --help and the docs: the test fails if one is wrong in either direction.
  test(`catches all single errors: ${a.catchesAllSingleErrors}; all adjacent transpositions: ${a.catchesAllAdjacentTranspositions} (brute force)`, () => {
    const r = bruteForce(a);
    expect(r.checked).toBeGreaterThan(1_000_000);
    if (a.catchesAllSingleErrors) expect(r.singles, "an undetected single error").toEqual({ count: 0 });
    else expect(r.singles.count, "no counterexample to a claim of false").toBeGreaterThan(0);
    if (a.catchesAllAdjacentTranspositions) expect(r.transpositions, "an undetected transposition").toEqual({ count: 0 });
    else expect(r.transpositions.count, "no counterexample to a claim of false").toBeGreaterThan(0);
  });
});

test("luhn misses exactly the 09 <-> 90 transposition", () => {
  expect(checkAlgorithm("luhn").validate("0901")).toBe(true);
  expect(checkAlgorithm("luhn").validate("9001")).toBe(true);
});

test("jd31 reads any length exactly (n mod 31 digit by digit)", () => {
  const jd = checkAlgorithm("jd31");
  const long = "98765432109876543210987654321";
  expect(jd.compute(long)).toBe(String(((BigInt(long) * 9n) % 31n) % 10n));
  expect(Number(long) > Number.MAX_SAFE_INTEGER).toBe(true);
});

test("an unknown name fails with UNKNOWN_CHECK_ALGORITHM and lists the valid ones", () => {
  try {
    checkAlgorithm("crc32");
    expect.unreachable();
  } catch (e) {
    expect(isIddError(e, "UNKNOWN_CHECK_ALGORITHM")).toBe(true);
    expect((e as Error).message).toBe('unknown check-digit algorithm "crc32": use one of luhn, verhoeff, damm, mod11-2, mod97-10, jd31');
  }
});

test("typed values: separators and letters ignored; a trailing X only for mod11-2", () => {
  const orcid = checkAlgorithm("mod11-2");
  expect(typedValueDigits(orcid, " 0000-0002-1694-233x ")).toBe("000000021694233X");
  expect(orcid.validate(typedValueDigits(orcid, "0000-0002-1694-233X"))).toBe(true);
  expect(orcid.validate(typedValueDigits(orcid, "0000-0002-1694-2339"))).toBe(false);
  const damm = checkAlgorithm("damm");
  expect(typedValueDigits(damm, "INV-2611-0000014")).toBe("26110000014");
  expect(typedValueDigits(damm, "12X")).toBe("12");
});

/** A page of docs/, e.g. "sequences.md". */
const docsPage = (name: string): string => readFileSync(new URL(`../../docs/${name}`, import.meta.url), "utf8");

test("docs/sequences.md's detection table says what the brute force verifies", () => {
  const sequences = docsPage("sequences.md");
  for (const name of CHECK_ALGORITHMS) {
    const a = checkAlgorithm(name);
    const row = sequences.split("\n").find((line) => line.startsWith(`| \`${name}\``));
    const cells = row?.split("|").map((c) => c.trim().split(" ")[0]);
    expect(cells?.slice(2, 4), name).toEqual([a.catchesAllSingleErrors ? "yes" : "no", a.catchesAllAdjacentTranspositions ? "yes" : "no"]);
  }
});

describe("mod97-10 is ISO/IEC 7064 MOD 97-10 as IBANs and python-stdnum compute and check it (issue 17)", () => {
  const a = checkAlgorithm("mod97-10");
  /** The standard's formula, independently: check = 98 - (payload × 100 mod 97), two digits. */
  const standardCheck = (payload: string) => String(98n - ((BigInt(payload) * 100n) % 97n)).padStart(2, "0");
  /** The standard's validation: the whole number mod 97 is 1. */
  const standardValid = (value: string) => BigInt(value) % 97n === 1n;
  const digits = (min: number, max: number) => fc.string({ unit: fc.constantFrom(..."0123456789"), minLength: min, maxLength: max });

  test("compute prints the standard pair (02-98) for random payloads", () => {
    fc.assert(
      fc.property(digits(1, 40), (payload) => {
        const check = a.compute(payload);
        expect(check).toBe(standardCheck(payload));
        expect(Number(check)).toBeGreaterThanOrEqual(2);
        expect(Number(check)).toBeLessThanOrEqual(98);
      }),
      { numRuns: 2000 },
    );
  });

  test("validate accepts exactly what the standard accepts, for any last two digits", () => {
    fc.assert(
      fc.property(digits(1, 40), fc.integer({ min: 0, max: 99 }), (payload, pair) => {
        const value = payload + String(pair).padStart(2, "0");
        expect(a.validate(value), value).toBe(standardValid(value));
      }),
      { numRuns: 5000 },
    );
    // Payloads where the standard prints 97 and 98: the 00 and 01 idd printed before stay valid.
    const payloads = Array.from({ length: 2000 }, (_, i) => String(i + 1)).filter((p) => Number(standardCheck(p)) >= 97);
    expect(payloads.length).toBeGreaterThan(20);
    for (const p of payloads) {
      const old = String(Number(standardCheck(p)) - 97).padStart(2, "0");
      expect([a.compute(p), a.validate(p + standardCheck(p)), a.validate(p + old)]).toEqual([standardCheck(p), true, true]);
    }
  });

  test("the issue's example: M202611.00001298 is valid, and 98 is what idd prints for it", () => {
    expect(a.validate(typedValueDigits(a, "M202611.00001298"))).toBe(true);
    expect(a.compute("202611000012")).toBe("98");
    expect(a.validate(typedValueDigits(a, "M202611.00001201"))).toBe(true); // what idd printed before
    expect(a.validate(typedValueDigits(a, "M202611.00001297"))).toBe(false);
  });
});

test("the docs' example values pass their checks (issue 17), and the formatted reply is what the template prints", async () => {
  const wire = docsPage("wire-contract.md");
  const sequences = docsPage("sequences.md");
  const examples: [string, CheckAlgorithmName, page: string][] = [
    ["010-20261123-000012", "damm", wire],
    ["010-20261123-000020", "damm", wire],
    ["INV-2611-0000013", "damm", sequences],
    ["INV-2611-0000021", "damm", sequences],
    ["48172639503", "damm", sequences],
  ];
  for (const [value, name, page] of examples) {
    expect(page, value).toContain(value);
    expect(checkAlgorithm(name).validate(typedValueDigits(checkAlgorithm(name), value)), value).toBe(true);
  }
  const { compileFormat, formatterFor } = await import("./format.js");
  const render = formatterFor(compileFormat("{field:area:3}-{yyyy}{MM}{dd}-{seq:5}{check:damm}"), {
    epochMs: 1795420800000,
    timeZone: "Asia/Shanghai",
    fields: { area: "010" },
  });
  expect(wire).toContain(`"formatted":["${render(1n)}","${render(2n)}"]`);
});
