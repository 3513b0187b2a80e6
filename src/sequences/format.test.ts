/** Formats rendered and parsed: the examples, escaping, problems, check digits, ambiguity (format-read.test.ts has the rest). */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { IddError, isIddError } from "../core/errors.js";
import { CHECK_ALGORITHMS, checkAlgorithm, typedValueDigits } from "./check-digits.js";
import { MAX_COUNTER } from "./definition.js";
import {
  compileFormat,
  dateStrings,
  formatterFor,
  MAX_SERIAL_DIGITS,
  MAX_TEMPLATE_LENGTH,
  maxLength,
  OVERFLOW_POLICIES,
  type OverflowPolicy,
  parseFormat,
  type RenderOptions,
  readValue,
} from "./format.js";

/** 00:30 on 22 November 2026 in Shanghai (UTC+8), still 16:30 on the 21st in UTC. */
const NEAR_MIDNIGHT = Date.parse("2026-11-21T16:30:00Z");
const SHANGHAI = { epochMs: NEAR_MIDNIGHT, timeZone: "Asia/Shanghai" };

const render = (template: string, options: RenderOptions, ...serials: bigint[]) =>
  serials.map(formatterFor(compileFormat(template), options));

/** The problems of a template that must not parse. */
function problemsOf(template: string): string[] {
  const r = parseFormat(template);
  expect(r.format, template).toBeUndefined();
  expect(r.problems.length, template).toBeGreaterThan(0);
  return r.problems;
}

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    return e instanceof IddError ? e.code : `not an IddError: ${String(e)}`;
  }
  return undefined;
}

describe("the examples users write render exactly", () => {
  test("{yyyy}{MM}{dd}{seq:5}: the day is the sequence zone's, not UTC's", () => {
    expect(render("{yyyy}{MM}{dd}{seq:5}", SHANGHAI, 1n, 42n)).toEqual(["2026112200001", "2026112200042"]);
    expect(render("{yyyy}{MM}{dd}{seq:5}", { epochMs: NEAR_MIDNIGHT, timeZone: "UTC" }, 1n)).toEqual(["2026112100001"]);
  });

  test("QJ{seq:6}", () => {
    expect(render("QJ{seq:6}", SHANGHAI, 1n, 999_999n)).toEqual(["QJ000001", "QJ999999"]);
  });

  test("{field:area}-{field:unit}-{seq:5}", () => {
    expect(render("{field:area}-{field:unit}-{seq:5}", { ...SHANGHAI, fields: { area: "010", unit: "6541" } }, 1n)).toEqual([
      "010-6541-00001",
    ]);
  });

  test("INV-{yy}{MM}-{seq:6}{check:damm}: the check covers every digit before it", () => {
    const [v] = render("INV-{yy}{MM}-{seq:6}{check:damm}", SHANGHAI, 1n);
    expect(v).toBe("INV-2611-0000013");
    expect(checkAlgorithm("damm").compute("2611000001")).toBe("3");
  });

  test("time of day: 24-hour clock in the zone, midnight is 00; half-hour zones; DST", () => {
    const t = "{yyyy}-{MM}-{dd} {HH}:{mm}:{ss} #{seq}";
    expect(render(t, { epochMs: Date.parse("2026-11-21T16:00:00Z"), timeZone: "Asia/Shanghai" }, 7n)).toEqual(["2026-11-22 00:00:00 #7"]);
    expect(render(t, { epochMs: Date.parse("2026-11-21T15:04:05Z"), timeZone: "UTC" }, 7n)).toEqual(["2026-11-21 15:04:05 #7"]);
    expect(render(t, { epochMs: Date.parse("2026-11-21T18:29:59Z"), timeZone: "Asia/Kolkata" }, 7n)).toEqual(["2026-11-21 23:59:59 #7"]);
    expect(render(t, { epochMs: Date.parse("2026-07-01T03:59:59Z"), timeZone: "America/New_York" }, 7n)).toEqual([
      "2026-06-30 23:59:59 #7",
    ]);
    expect(render(t, { epochMs: Date.parse("2026-01-01T04:59:59Z"), timeZone: "America/New_York" }, 7n)).toEqual([
      "2025-12-31 23:59:59 #7",
    ]);
  });

  test("date parts change at the second boundary (the per-zone memo of the last second)", () => {
    const t = Date.parse("2026-12-31T23:59:59.999Z");
    expect(dateStrings("UTC", t)).toMatchObject({ yyyy: "2026", ss: "59" });
    expect(dateStrings("UTC", t)).toBe(dateStrings("UTC", t - 500)); // same second: the same strings
    expect(dateStrings("UTC", t + 1)).toEqual({ yyyy: "2027", yy: "27", MM: "01", dd: "01", HH: "00", mm: "00", ss: "00" });
    expect(dateStrings("Asia/Shanghai", t + 1)).toMatchObject({ yyyy: "2027", HH: "08" });
  });

  test("{seq} prints the serial unpadded; a format without date parts needs no zone to render", () => {
    expect(render("N{seq}", { epochMs: 0, timeZone: "Not/AZone" }, 0n, 5n, MAX_COUNTER)).toEqual(["N0", "N5", `N${MAX_COUNTER}`]);
  });
});

describe("escaping", () => {
  test("{{ and }} print braces, also around and next to placeholders", () => {
    expect(render("{{{seq}}}", SHANGHAI, 1n)).toEqual(["{1}"]);
    expect(render("a{{b}}c-{seq:2}", SHANGHAI, 1n)).toEqual(["a{b}c-01"]);
    expect(render("}}{{{seq}", SHANGHAI, 1n)).toEqual(["}{1"]);
  });

  test("an escaped placeholder is text, not a placeholder", () => {
    expect(problemsOf("{{seq}}")).toEqual(["the format has no {seq}, {seq:N} or {obf:N}: it needs exactly one"]);
  });
});

describe("parse problems: each clear, with its position, all at once", () => {
  test.each([
    ["", /^the format is empty: it needs at least \{seq\}$/],
    ["QJ", /^the format has no \{seq\}, \{seq:N\} or \{obf:N\}: it needs exactly one$/],
    [
      "{seq}{seq:3}",
      /^\{seq:3\} at position 6: the serial \(\{seq\}, \{seq:N\} or \{obf:N\}\) may appear only once \(first at position 1\)$/,
    ],
    ["{seq:3}-{obf:8}", /^\{obf:8\} at position 9: the serial .* may appear only once \(first at position 1\)$/],
    ["{obf:6}", /^\{obf:6\} at position 1: write \{obf:N\} with N a whole number from 7 to 18 \(got "6"\)$/],
    ["{obf}", /write \{obf:N\} .*\(got ""\)$/],
    ["{obf:19}", /\(got "19"\)$/],
    ["{seq:0}", /^\{seq:0\} at position 1: write \{seq\} or \{seq:N\} with N a whole number from 1 to 18 \(got "0"\)$/],
    ["{seq:19}", /at position 1: .*from 1 to 18 \(got "19"\)$/],
    ["{seq:x}", /\(got "x"\)$/],
    ["{seq:5:6}", /\(got "5:6"\)$/],
    ["{seq:-1}", /\(got "-1"\)$/],
    ["{YYYY}{seq}", /^\{YYYY\} at position 1: unknown placeholder \(did you mean \{yyyy\}\?\); expected one of \{yyyy\}, \{yy\}, \{MM\}/],
    ["{Mm}{seq}", /did you mean \{MM\} or \{mm\}\?/],
    ["{ seq }", /^\{ seq \} at position 1: unknown placeholder \(did you mean \{seq\}\?\)/],
    [
      "{date}{seq}",
      /^\{date\} at position 1: unknown placeholder; expected one of .*\{check:algorithm\} \(write \{\{ and \}\} for literal braces\)$/,
    ],
    ["{}{seq}", /^\{\} at position 1: unknown placeholder/],
    ["{yyyy:4}{seq}", /^\{yyyy:4\} at position 1: \{yyyy\} takes no arguments$/],
    ["{field}{seq}", /^\{field\} at position 1: the field name must be a-z then up to 31 of a-z 0-9 _ \(got ""\)$/],
    ["{field:Area}{seq}", /the field name must be .*\(got "Area"\)$/],
    [`{field:${"a".repeat(33)}}{seq}`, /the field name must be/],
    ["{field:area:0}{seq}", /^\{field:area:0\} at position 1: the maximum length must be a whole number from 1 to 64 \(got "0"\)$/],
    ["{field:area:65}{seq}", /the maximum length must be a whole number from 1 to 64 \(got "65"\)$/],
    ["{field:area:3:4}{seq}", /write \{field:name\} or \{field:name:N\}$/],
    ["{field:area}-{seq}-{field:area:3}", /^\{field:area:3\} at position 20: field "area" may appear only once \(first at position 1\)$/],
    [
      "{seq}{check}",
      /^\{check\} at position 6: write \{check:algorithm\} with one of luhn, verhoeff, damm, mod11-2, mod97-10, jd31 \(got ""\)$/,
    ],
    ["{seq}{check:crc32}", /\(got "crc32"\)$/],
    ["{check:luhn}{seq}", /^\{check:luhn\} at position 1: must be the last part \(found "\{seq\}" after it\)$/],
    ["{seq}{check:luhn}-", /^\{check:luhn\} at position 6: must be the last part \(found "-" after it\)$/],
    ["QJ{seq}}", /^position 8: a lone "\}" \(write \}\} for a literal brace\)$/],
    ["QJ{seq:6", /^position 3: "\{" opens a placeholder that is never closed \(write \{\{ for a literal brace\)$/],
    ["QJ{seq{seq}", /^position 3: "\{" opens a placeholder that is never closed/],
    ["a\u0007{seq}", /^position 2: a control character \(U\+0007\)$/],
    ["a\n{seq}", /^position 2: a control character \(U\+000a\)$/],
    [`${"x".repeat(MAX_TEMPLATE_LENGTH)}{seq}`, /^the format is 261 characters long; at most 256 are allowed$/],
  ])("%j", (template, expected) => {
    const problems = problemsOf(template);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(expected);
  });

  test("two checks: the first is not last, the second is one too many", () => {
    expect(problemsOf("{seq}{check:luhn}{check:damm}")).toEqual([
      '{check:luhn} at position 6: must be the last part (found "{check:damm}" after it)',
      "{check:damm} at position 18: {check:…} may appear only once (first at position 6)",
    ]);
  });

  test("every problem at once, in template order; compileFormat throws FORMAT_INVALID listing them", () => {
    const template = "{check:damm}{YYYY}-{seq:0}-{field:Area}}-{field:u}{field:u}";
    const problems = problemsOf(template);
    // 42: the first {field:u} is also ambiguous (nothing shows where it ends).
    expect(problems.map((p) => p.match(/position (\d+)/)?.[1])).toEqual(["1", "13", "20", "28", "40", "42", "51"]);
    try {
      compileFormat(template);
      expect.unreachable();
    } catch (e) {
      expect(isIddError(e, "FORMAT_INVALID")).toBe(true);
      expect((e as Error).message.split("\n")).toEqual([`format "${template.slice(0, 40)}…":`, ...problems]);
    }
  });

  test("never throws, whatever the input", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom("{", "}", ":", "seq", "field", "check", "yyyy", "5", "a", "X", "\u0000", "é") }),
        (t) => {
          const r = parseFormat(t);
          expect(r.format === undefined).toBe(r.problems.length > 0);
        },
      ),
      { numRuns: 2000 },
    );
    expect(parseFormat(42 as unknown as string).problems).toEqual(["the format must be a string"]);
  });
});

describe("check digits", () => {
  test.each(CHECK_ALGORITHMS)("{check:%s} output validates with the algorithm, as typed by a person", (name) => {
    const algorithm = checkAlgorithm(name);
    const f = formatterFor(compileFormat(`AB-{field:shop}-{yyyy}{MM}{dd}-{seq:8}{check:${name}}`), {
      ...SHANGHAI,
      fields: { shop: "S07x9" },
    });
    for (const serial of [0n, 1n, 9n, 12_345_678n, 99_999_999n]) {
      const v = f(serial);
      expect(v.startsWith(`AB-S07x9-20261122-${String(serial).padStart(8, "0")}`)).toBe(true);
      expect(v).toHaveLength(`AB-S07x9-20261122-00000000`.length + algorithm.width);
      // Only the digits before the check count: 0, 7, 9 of the field, then the date and the serial.
      expect(v.slice(-algorithm.width)).toBe(algorithm.compute(`079${"20261122"}${String(serial).padStart(8, "0")}`));
      expect(algorithm.validate(typedValueDigits(algorithm, v))).toBe(true);
    }
  });
});

describe("ambiguity: a template whose values cannot be read back is refused", () => {
  test.each(["{yyyy}{MM}{dd}{seq:5}", "QJ{seq:6}", "{field:area}-{field:unit}-{seq:5}", "INV-{yy}{MM}-{seq:6}{check:damm}"])(
    "the examples are accepted under both policies: %s",
    (template) => {
      for (const overflow of OVERFLOW_POLICIES) expect(parseFormat(template, { overflow }).problems).toEqual([]);
    },
  );

  test("{field:a}{seq}: one problem, on the field, saying what to do", () => {
    // a=1 serial 23 and a=12 serial 3 would both print 123.
    expect(problemsOf("{field:a}{seq}")).toEqual([
      "{field:a} at position 1: ambiguous: it prints 1 to 16 characters of A-Z a-z 0-9, and nothing between it and {seq} at position 10 " +
        'shows where it ends; put a character it never prints between them (such as "-"), or only fixed-width parts after it ' +
        "(literals, date parts, {seq:N}, {check:…})",
    ]);
    expect(parseFormat("{seq:5}{field:a}", { overflow: "widen" }).problems).toEqual([
      "{seq:5} at position 1: ambiguous: it prints 5 or more digits (overflow widen), and nothing between it and {field:a} at position 8 " +
        'shows where it ends; put a character it never prints between them (such as "-"), or only fixed-width parts after it ' +
        "(literals, date parts, {check:…}; {seq:N} widens)",
    ]);
  });

  test.each([
    ["{field:a}{seq:3}{field:b}", "refuse", [1]], // a=1 234 b=56 and a=12 345 b=6: 123456
    ["{seq}{field:a}", "refuse", [1]], // 1 + 23 and 12 + 3
    ["{field:a}{field:b}-{seq}", "refuse", [1]],
    ["{field:a}{yyyy}{field:b}-{seq}", "refuse", [1]],
    ["{seq}7{field:a}", "refuse", [1]], // a digit separates nothing from {seq}
    ["{seq}{field:a:1}{field:b}", "refuse", [1]],
    ["{field:a}{seq:5}", "widen", [1]], // a=1 serial 234567 and a=12 serial 34567
    ["{field:a}{seq}{field:b}-{field:c}{seq:2}", "refuse", [1, 10]], // and {seq} twice
    // Readable right to left (the last "A" ends the field), but the rule reads left to right: sufficient, not necessary.
    ["{field:a}A{seq}", "refuse", [1]],
  ] as const)("%s is refused under %s (problems at %j)", (template, overflow, positions) => {
    const { format, problems } = parseFormat(template, { overflow });
    expect(format).toBeUndefined();
    const ambiguous = problems.filter((p) => p.includes("ambiguous"));
    expect(ambiguous.map((p) => Number(p.match(/at position (\d+)/)?.[1]))).toEqual(positions);
  });

  test("{field:a}{seq:5} is fine when serials never widen: checked for refuse, it cannot be rendered or read widened", () => {
    const f = compileFormat("{field:a}{seq:5}");
    expect(f.overflow).toBe("refuse");
    expect(readValue(f, "AB00042")).toEqual({ serial: 42n, fields: { a: "AB" }, date: {} });
    expect(codeOf(() => formatterFor(f, { ...SHANGHAI, fields: { a: "1" }, overflow: "widen" }))).toBe("FORMAT_INVALID");
    expect(codeOf(() => readValue(f, "AB00042", { overflow: "widen" }))).toBe("FORMAT_INVALID");
    expect(codeOf(() => compileFormat("{field:a}{seq:5}", { overflow: "widen" }))).toBe("FORMAT_INVALID");
  });

  test("a format checked for widen renders widened by default", () => {
    const f = compileFormat("QJ{seq:2}", { overflow: "widen" });
    expect(formatterFor(f, SHANGHAI)(100n)).toBe("QJ100");
    expect(maxLength(f)).toBe(2 + MAX_SERIAL_DIGITS);
    expect(readValue(f, "QJ100")?.serial).toBe(100n);
    expect(parseFormat("{seq}", { overflow: "grow" as OverflowPolicy }).problems).toEqual([
      'the overflow policy must be one of refuse, widen (got "grow")',
    ]);
  });

  // Counterexamples to the first rule proposed (a variable part directly followed by a separator, or by
  // fixed-width parts only up to the end): these are unambiguous and accepted, and they read back.
  test.each([
    ["{field:shop}{yyyy}{MM}{dd}-{seq:5}", "widen", { shop: "SH" }, 123_456n, "SH20261122-123456"],
    ["{field:shop}{yyyy}{MM}{dd}-{seq}", "refuse", { shop: "S2" }, 7n, "S220261122-7"],
    ["{seq}X{field:a}", "refuse", { a: "7b" }, 12n, "12X7b"],
    ["{field:region:1}{field:kind:1}{seq:6}", "widen", { region: "A", kind: "9" }, 1_234_567n, "A91234567"],
    ["{seq}{field:k:1}-{field:x}", "refuse", { k: "3", x: "Z" }, 12n, "123-Z"],
    ["{seq}{field:k:1}-{field:x}", "refuse", { k: "c", x: "Z" }, 12n, "12c-Z"],
    ["{seq:16}{field:a}", "widen", { a: "1" }, 5n, "00000000000000051"],
  ] as const)("%s (%s) is accepted: %s", (template, overflow, fields, serial, value) => {
    const f = compileFormat(template, { overflow });
    expect(formatterFor(f, { ...SHANGHAI, fields })(serial)).toBe(value);
    const { date, ...rest } = readValue(f, value) ?? {};
    expect(rest).toEqual({ serial, fields });
    expect(Object.values(date ?? {}).join("")).toBe(f.dateUnits.size > 0 ? "20261122" : "");
  });
});
