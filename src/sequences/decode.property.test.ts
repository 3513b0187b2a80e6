/**
 * `idd decode` gives back what was issued, for every kind and every part a format can print: random
 * definitions (formats of dates, `{seq}`, `{seq:N}`, `{obf:N}`, fields and check digits), random serials,
 * instants, time zones, fields and key versions. Each value is made the way the dispenser makes it —
 * the kind's `refuse`, then `numbers`, then `present`, in that order and with one key set — and then
 * decoded: the serial, the key version, the fields and the dates must come back.
 */
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { type DateUnit, dateStrings } from "../core/date-parts.js";
import { CHECK_ALGORITHMS } from "./check-digits.js";
import { decodeValue } from "./decode.js";
import { defineSequence, type SequenceDef } from "./definition.js";
import { parseFormat } from "./format.js";
import { kindOf } from "./kinds/table.js";
import { parseObfuscationKeys } from "./obfuscation/keys.js";
import { compose, decompose } from "./snowflake-layout.js";

const keys = parseObfuscationKeys(
  [1, 2, 3].map((v) => `${v}:${Buffer.alloc(16 + 8 * (v - 1), v * 17).toString("base64")}`).join(","),
  "test",
);
const ctx = { obfuscation: keys };
const ZONES = ["UTC", "Asia/Shanghai", "America/New_York", "Pacific/Chatham"];
/** 2000-01-01 to 2099-12-31. */
const instant = fc.integer({ min: 946_684_800_000, max: 4_102_444_799_000 });

/** Blocks of a template; the generator joins them with separators, and parseFormat keeps the readable ones. */
const dateBlock = fc.constantFrom<DateUnit[]>(["yyyy"], ["yy", "MM"], ["yyyy", "MM", "dd"], ["yy", "MM", "dd", "HH", "mm", "ss"], ["dd"]);
const serialBlock = fc.oneof(
  fc.constant("{seq}"),
  fc.integer({ min: 1, max: 18 }).map((n) => `{seq:${n}}`),
  fc.integer({ min: 7, max: 18 }).map((n) => `{obf:${n}}`),
);
const fieldBlock = fc.integer({ min: 1, max: 12 }).map((n) => `{field:f${n}:${n}}`);
const template = fc
  .record({
    prefix: fc.constantFrom("", "INV-", "Q", "x{{"),
    blocks: fc.shuffledSubarray(["date", "field1", "field2"]).chain((extra) =>
      fc.tuple(
        fc.shuffledSubarray([...extra, "serial"], { minLength: extra.length + 1 }),
        dateBlock,
        serialBlock,
        fieldBlock,
        fieldBlock.map((f) => f.replace("{field:f", "{field:g")),
        fc.array(fc.constantFrom("", "-", "/", "."), { minLength: 4, maxLength: 4 }),
      ),
    ),
    check: fc.constantFrom("", ...CHECK_ALGORITHMS.map((a) => `{check:${a}}`)),
  })
  .map(({ prefix, blocks: [order, dates, serial, f1, f2, seps], check }) => {
    const text = { date: dates.map((u) => `{${u}}`).join(""), serial, field1: f1, field2: f2 } as Record<string, string>;
    return prefix + order.map((b, i) => `${text[b] ?? ""}${i < order.length - 1 ? (seps[i] ?? "") : ""}`).join("") + check;
  });

/** What the dispenser does with serials just taken: refuse (before the take), numbers, present. */
function issue(def: SequenceDef, first: bigint, count: number, at: number, fields: Record<string, string>): string[] {
  const kind = kindOf(def);
  const request = { fields };
  const refused = kind.refuse(def, request, ctx);
  if (refused) throw refused;
  const serials = [{ first, last: first + BigInt(count - 1) }];
  const ranges = kind.numbers ? kind.numbers(def, { ranges: serials, at }, ctx) : serials;
  const formatted = kind.present(def, { ranges, at }, request, ctx);
  if (formatted.length > 0) return formatted;
  return ranges.flatMap((r) => Array.from({ length: Number(r.last - r.first + 1n) }, (_, i) => (r.first + BigInt(i)).toString()));
}

const fieldValue = (max: number) => fc.stringMatching(new RegExp(`^[A-Za-z0-9]{1,${max}}$`));

describe("decode(issue(serial)) is the serial", () => {
  test("formatted: every part, {seq} and {obf:N}, with the fields and dates printed", () => {
    let formats = 0;
    fc.assert(
      fc.property(
        template,
        fc.constantFrom("refuse", "widen"),
        fc.bigInt({ min: 0n, max: 2n ** 53n - 4n }),
        fc.integer({ min: 1, max: 3 }),
        instant,
        fc.constantFrom(...ZONES),
        fc.constantFrom(1, 2, 3),
        fc.array(fieldValue(12), { minLength: 24, maxLength: 24 }),
        (t, overflow, s, count, at, timeZone, keyVersion, values) => {
          const { format } = parseFormat(t, { overflow: overflow as "refuse" | "widen" });
          fc.pre(format !== undefined);
          formats++;
          const def = defineSequence(
            {
              name: `d-${randomUUID()}`,
              kind: "formatted",
              format: t,
              overflow,
              timeZone,
              start: 0,
              ...(format?.obfuscated && { keyVersion }),
            },
            new Date(at),
          );
          const first = s % (def.maxValue - 2n);
          const fields = Object.fromEntries([...(format?.fields ?? [])].map(([name, max], i) => [name, (values[i] ?? "a").slice(0, max)]));
          const printed = dateStrings(timeZone, at);
          const date = Object.fromEntries([...(format?.dateUnits ?? [])].map((u) => [u, printed[u]]));
          issue(def, first, count, at, fields).forEach((value, i) => {
            const d = decodeValue(def, value, keys);
            expect({ value, ...d }).toEqual({
              value,
              serial: first + BigInt(i),
              ...(format?.obfuscated && { keyVersion }),
              fields,
              date,
            });
          });
        },
      ),
      { numRuns: 400 },
    );
    expect(formats).toBeGreaterThan(200);
  });

  test("monotonic, daily and obfuscated: the serial (and the key version)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("monotonic", "daily", "obfuscated"),
        fc.integer({ min: 7, max: 18 }),
        fc.constantFrom(1, 2, 3),
        fc.bigInt({ min: 0n, max: 2n ** 53n - 4n }),
        instant,
        (kind, digits, keyVersion, s, at) => {
          const obf = kind === "obfuscated";
          const def = defineSequence({ name: `d-${randomUUID()}`, kind, start: 0, ...(obf && { digits, keyVersion }) }, new Date(at));
          const first = s % (def.maxValue - 2n);
          issue(def, first, 3, at, {}).forEach((value, i) => {
            expect(decodeValue(def, value, keys)).toEqual({ serial: first + BigInt(i), ...(obf && { keyVersion }), fields: {}, date: {} });
          });
        },
      ),
      { numRuns: 200 },
    );
  });

  test("snowflake: an id decomposes into the time, worker and sequence it was composed of", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 41 - 1 }),
        fc.integer({ min: 0, max: 1023 }),
        fc.integer({ min: 0, max: 4095 }),
        (units, worker, seq) => {
          const def = defineSequence({ name: `d-${randomUUID()}`, kind: "snowflake", layout: "epoch=2026-01-01T00:00:00Z" }, new Date());
          const layout = def.snowflake;
          if (!layout) throw new Error("no layout");
          const id = compose(layout, { time: units, worker, seq });
          expect(decompose(layout, id.toString())).toMatchObject({ units, worker, seq });
          expect(() => decodeValue(def, id.toString(), keys)).toThrow(/snowflake/);
        },
      ),
      { numRuns: 100 },
    );
  });
});
