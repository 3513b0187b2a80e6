import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { IddError, isIddError } from "../core/errors.js";
import { CHECK_ALGORITHMS, checkAlgorithm, typedValueDigits } from "./check-digits.js";
import { MAX_COUNTER } from "./definition.js";
import {
  compileFormat,
  dateStrings,
  finestPeriod,
  formatterFor,
  MAX_SERIAL_DIGITS,
  MAX_TEMPLATE_LENGTH,
  maxLength,
  maxSerial,
  OVERFLOW_POLICIES,
  type OverflowPolicy,
  parseFormat,
  type RenderOptions,
  readValue,
  validateFields,
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

describe("readValue: the serial, fields and date parts a value was printed from, or undefined", () => {
  const inv = compileFormat("INV-{yy}{MM}-{seq:6}{check:damm}");

  test("reads what the format renders", () => {
    expect(readValue(inv, "INV-2611-0000013")).toEqual({ serial: 1n, fields: {}, date: { yy: "26", MM: "11" } });
    const f = compileFormat("{field:area}-{field:unit}-{seq:5}");
    expect(readValue(f, "010-6541-00001")).toEqual({ serial: 1n, fields: { area: "010", unit: "6541" }, date: {} });
  });

  test.each([
    ["INV-2611-0000014", "a check that does not match"],
    ["INX-2611-0000013", "a wrong literal"],
    ["INV-2611-000001", "one character short"],
    ["INV-2611-00000133", "one character too many"],
    ["INV-26A1-0000013", "a date part that is not digits"],
    ["INV-2613-0000013", "month 13"],
    ["INV-2611-00000a3", "a serial that is not digits"],
    ["", "empty"],
  ])("%j: %s", (value) => {
    expect(readValue(inv, value)).toBeUndefined();
  });

  test("serials: only what {seq} prints (no leading zeros), {seq:N} padded, widened without leading zeros", () => {
    const n = compileFormat("N{seq}");
    expect([readValue(n, "N0")?.serial, readValue(n, "N15")?.serial]).toEqual([0n, 15n]);
    for (const v of ["N", "N007", "N00", `N${"9".repeat(MAX_SERIAL_DIGITS + 1)}`]) expect(readValue(n, v), v).toBeUndefined();
    const qj = compileFormat("QJ{seq:6}");
    expect(readValue(qj, "QJ1000000")).toBeUndefined();
    expect(readValue(qj, "QJ1000000", { overflow: "widen" })?.serial).toBe(1_000_000n);
    for (const v of ["QJ0100000", "QJ00001"]) expect(readValue(qj, v, { overflow: "widen" }), v).toBeUndefined();
  });

  test("fields: 1 to N of A-Z a-z 0-9", () => {
    const f = compileFormat("{field:area:3}-{field:unit}-{seq:5}");
    for (const v of ["0100-6541-00001", "010-65_1-00001", "-6541-00001", "010--00001", "010-6541-"])
      expect(readValue(f, v), v).toBeUndefined();
  });

  test("date parts of one instant: a repeated unit prints the same, yy is the end of yyyy", () => {
    const f = compileFormat("{yyyy}{yy}{MM}-{MM}-{seq}");
    expect(readValue(f, "20262611-11-1")?.date).toEqual({ yyyy: "2026", yy: "26", MM: "11" });
    expect(readValue(f, "20262511-11-1")).toBeUndefined();
    expect(readValue(f, "20262611-12-1")).toBeUndefined();
  });

  test("a value that is not a string is not read", () => {
    expect(readValue(inv, 42 as unknown as string)).toBeUndefined();
  });
});

describe("{obf:N}: prints the value the kind obfuscated, N digits, read back as the serial", () => {
  const f = compileFormat("INV{yy}-{obf:10}{check:damm}");

  test("renders N digits and reads the value back; the check covers it", () => {
    const [v] = render("INV{yy}-{obf:10}{check:damm}", SHANGHAI, 4_817_263_950n);
    expect(v).toBe(`INV26-4817263950${checkAlgorithm("damm").compute("264817263950")}`);
    expect(readValue(f, v as string)?.serial).toBe(4_817_263_950n);
    expect(readValue(f, `${(v as string).slice(0, -1)}${(Number((v as string).slice(-1)) + 1) % 10}`)).toBeUndefined();
  });

  test("fixed width under either policy: a field may come right before it, and it never widens", () => {
    for (const overflow of OVERFLOW_POLICIES) expect(parseFormat("{field:a}{obf:7}", { overflow }).problems).toEqual([]);
    const widen = compileFormat("{obf:7}", { overflow: "widen" });
    expect(codeOf(() => formatterFor(widen, SHANGHAI)(12_345_678n))).toBe("SERIAL_OVERFLOW");
  });

  test("maxSerial is the obfuscated domain's last serial, 10^(N-1) - 1, whatever the policy", () => {
    expect(maxSerial(f)).toBe(999_999_999n);
    expect(maxSerial(compileFormat("{obf:18}", { overflow: "widen" }))).toBe(10n ** 17n - 1n);
  });
});

describe("overflow", () => {
  const f = compileFormat("QJ{seq:6}");

  test("maxSerial is 10^N - 1 for {seq:N}, null for {seq}", () => {
    expect(maxSerial(f)).toBe(999_999n);
    expect(maxSerial(compileFormat("{seq:18}"))).toBe(10n ** 18n - 1n);
    expect(maxSerial(compileFormat("{seq}"))).toBeNull();
  });

  test("refuse (the default): SERIAL_OVERFLOW past 10^N - 1", () => {
    const r = formatterFor(f, SHANGHAI);
    expect(r(999_999n)).toBe("QJ999999");
    expect(codeOf(() => r(1_000_000n))).toBe("SERIAL_OVERFLOW");
    expect(() => r(1_000_000n)).toThrow("serial 1000000 does not fit {seq:6} (at most 999999)");
    expect(codeOf(() => formatterFor(f, { ...SHANGHAI, overflow: "refuse" })(1_000_000n))).toBe("SERIAL_OVERFLOW");
  });

  test("widen: every digit is printed", () => {
    const r = formatterFor(f, { ...SHANGHAI, overflow: "widen" });
    expect([r(999_999n), r(1_000_000n), r(MAX_COUNTER)]).toEqual(["QJ999999", "QJ1000000", `QJ${MAX_COUNTER}`]);
  });

  test("a negative serial is a bug, not a number", () => {
    expect(() => formatterFor(f, SHANGHAI)(-1n)).toThrow(RangeError);
  });
});

describe("maxLength bounds every rendered value", () => {
  test("examples", () => {
    expect(MAX_SERIAL_DIGITS).toBe(String(MAX_COUNTER).length);
    expect(maxLength(compileFormat("{yyyy}{MM}{dd}{seq:5}"))).toBe(13);
    expect(maxLength(compileFormat("{yyyy}{MM}{dd}{seq:5}"), "widen")).toBe(8 + MAX_SERIAL_DIGITS);
    expect(maxLength(compileFormat("INV-{yy}{MM}-{seq:6}{check:mod97-10}"))).toBe(17);
    expect(maxLength(compileFormat("{field:area}-{field:unit:4}-{seq}"))).toBe(16 + 1 + 4 + 1 + MAX_SERIAL_DIGITS);
    expect(maxLength(compileFormat("{{{seq:3}}}"))).toBe(5);
  });

  test("property: random formats, serials and fields never render longer", () => {
    const part = fc.oneof(
      fc.constantFrom("{yyyy}", "{yy}", "{MM}", "{dd}", "{HH}", "{mm}", "{ss}", "-", "{{", "}}", "QJ"),
      fc.integer({ min: 1, max: 64 }).map((n) => `{field:f${n}:${n}}`),
    );
    fc.assert(
      fc.property(
        fc.array(part, { maxLength: 6 }),
        fc.option(fc.integer({ min: 1, max: 18 })),
        fc.option(fc.constantFrom(...CHECK_ALGORITHMS)),
        fc.bigInt({ min: 0n, max: MAX_COUNTER }),
        fc.constantFrom<OverflowPolicy>("refuse", "widen"),
        fc.integer({ min: 0, max: 4_102_444_800_000 }),
        (before, width, check, serial, overflow, epochMs) => {
          const t = `${before.join("")}{seq${width === null ? "" : `:${width}`}}${check === null ? "" : `{check:${check}}`}`;
          const { format } = parseFormat(t, { overflow });
          if (!format) return; // a field repeated, or ambiguous: refused, as intended
          const fields = Object.fromEntries([...format.fields].map(([name, max]) => [name, "Z".repeat(max)]));
          const fits = width === null || serial < 10n ** BigInt(width) || overflow === "widen";
          if (!fits) return;
          const v = formatterFor(format, { epochMs, timeZone: "Asia/Shanghai", fields, overflow })(serial);
          expect(v.length).toBeLessThanOrEqual(maxLength(format, overflow));
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("finestPeriod: the finest reset period whose values never repeat", () => {
  test.each([
    ["{seq}", "never"],
    ["{HH}{mm}{ss}{seq}", "never"],
    ["{MM}{seq}", "never"],
    ["{dd}{seq}", "never"],
    ["{MM}{dd}{seq}", "never"],
    ["{yyyy}{seq}", "yearly"],
    ["{yy}{seq}", "yearly"],
    ["{yyyy}{dd}{seq}", "yearly"],
    ["{yyyy}{MM}{seq}", "monthly"],
    ["{yy}-{MM}-{seq}", "monthly"],
    ["{yyyy}{MM}{dd}{seq}", "daily"],
    ["{dd}{MM}{yy}{HH}{seq}", "daily"],
    ["{yyyy}{yy}{MM}{dd}{HH}{mm}{ss}{seq}", "daily"],
  ])("%s is %s", (template, period) => {
    expect(finestPeriod(compileFormat(template))).toBe(period);
  });

  test("the date units printed are exposed for the definition", () => {
    expect([...compileFormat("{yy}{MM}{yy}-{seq}").dateUnits]).toEqual(["yy", "MM"]);
  });
});

describe("request fields", () => {
  const f = compileFormat("{field:area:3}-{field:unit}-{seq:5}");

  test("a format's fields, in template order, with their maximum lengths", () => {
    expect([...f.fields]).toEqual([
      ["area", 3],
      ["unit", 16],
    ]);
  });

  test("every problem: missing, unknown, empty, too long, bad characters, not a string", () => {
    expect(validateFields(f, { area: "010", unit: "6541" })).toEqual([]);
    expect(validateFields(f, undefined)).toEqual(['field "area" is missing', 'field "unit" is missing']);
    expect(validateFields(f, { area: "0100", unit: "", shop: "x" })).toEqual([
      'field "area" is 4 characters long; at most 3',
      'field "unit" is empty',
      'unknown field "shop": the format\'s fields are area, unit',
    ]);
    expect(validateFields(f, { area: "01-", unit: 6541 })).toEqual([
      'field "area" has characters outside A-Z a-z 0-9',
      'field "unit" must be a string',
    ]);
    expect(validateFields(f, { area: "北京", unit: "1" })).toEqual(['field "area" has characters outside A-Z a-z 0-9']);
    expect(validateFields(compileFormat("{seq}"), { a: "1" })).toEqual(['unknown field "a": the format has no fields']);
  });

  test("inherited names are not fields; a flood of unknown fields is summarised", () => {
    expect(validateFields(compileFormat("{field:constructor}-{seq}"), {})).toEqual(['field "constructor" is missing']);
    expect(validateFields(compileFormat("{seq}"), JSON.parse('{"__proto__": "x"}'))).toEqual([
      'unknown field "__proto__": the format has no fields',
    ]);
    const many = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`f${i}`, "1"]));
    const problems = validateFields(compileFormat("{seq}"), many);
    expect(problems).toHaveLength(11);
    expect(problems.at(-1)).toBe("and 990 more unknown fields");
  });

  test("formatterFor refuses bad fields with BAD_FIELDS, listing every problem", () => {
    try {
      formatterFor(f, { ...SHANGHAI, fields: { area: "0100" } });
      expect.unreachable();
    } catch (e) {
      expect(isIddError(e, "BAD_FIELDS")).toBe(true);
      expect((e as Error).message).toBe('field "area" is 4 characters long; at most 3\nfield "unit" is missing');
    }
  });
});

test("an unknown time zone is a definition problem (SEQUENCE_INVALID), raised when dates are printed", () => {
  expect(codeOf(() => formatterFor(compileFormat("{yyyy}{seq}"), { epochMs: 0, timeZone: "Mars/Base" }))).toBe("SEQUENCE_INVALID");
});

test("mod97-10: values print the standard pair, and values printed earlier with 00 or 01 still read back", () => {
  const format = compileFormat("QJ{seq:8}{check:mod97-10}");
  const render = formatterFor(format, { epochMs: 0, timeZone: "UTC" });
  expect(render(65n)).toBe("QJ0000006597"); // idd printed QJ0000006500 before (issue 17)
  expect(readValue(format, "QJ0000006597")?.serial).toBe(65n);
  expect(readValue(format, "QJ0000006500")?.serial).toBe(65n);
  expect(readValue(format, "QJ0000006596")).toBeUndefined();
});
