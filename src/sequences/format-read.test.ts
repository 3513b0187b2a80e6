/** Formats read back, overflow, bounds, periods and request fields (format.test.ts has rendering and parsing). */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { IddError, isIddError } from "../core/errors.js";
import { CHECK_ALGORITHMS, checkAlgorithm } from "./check-digits.js";
import { MAX_COUNTER } from "./definition.js";
import {
  compileFormat,
  finestPeriod,
  formatterFor,
  MAX_SERIAL_DIGITS,
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
function _problemsOf(template: string): string[] {
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
