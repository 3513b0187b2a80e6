import { expect, test } from "vitest";
import { periodOf } from "../core/period.js";
import { defineSequence, MAX_COUNTER, type SequenceInput } from "./definition.js";

const now = new Date("2026-11-21T12:00:00Z");

test("defaults: monotonic from 1 up to 2^53 - 1; daily in UTC unless a zone is given", () => {
  expect(defineSequence({ name: "order" }, now)).toMatchObject({ kind: "monotonic", start: 1n, maxValue: MAX_COUNTER, timeZone: null });
  expect(defineSequence({ name: "inv", kind: "daily" }, now).timeZone).toBe("UTC");
  expect(defineSequence({ name: "inv", kind: "daily", start: "1000000", timeZone: "Asia/Shanghai" }, now)).toMatchObject({
    start: 1_000_000n,
    timeZone: "Asia/Shanghai",
  });
});

test("every problem of a definition is reported at once", () => {
  expect(() => defineSequence({ name: "bad name!", kind: "hourly", start: "x", timeZone: "Mars/Base" }, now)).toThrow(
    /name must be[\s\S]*kind must be one of monotonic, daily[\s\S]*start must be an integer/,
  );
  expect(() => defineSequence({ name: "d", kind: "daily", timeZone: "Mars/Base" }, now)).toThrow(/timeZone "Mars\/Base" is not an IANA/);
  expect(() => defineSequence({ name: "m", timeZone: "UTC" }, now)).toThrow(/timeZone does not apply to monotonic sequences/);
  expect(() => defineSequence({ name: "m", start: 10, maxValue: 5 }, now)).toThrow(/maxValue must be ≥ start/);
});

test("updates cannot change kind or start", () => {
  const d = defineSequence({ name: "d", kind: "daily", timeZone: "UTC" }, now);
  expect(defineSequence({ name: "d", timeZone: "Europe/Berlin" }, now, d).timeZone).toBe("Europe/Berlin");
  expect(() => defineSequence({ name: "d", kind: "monotonic", timeZone: null }, now, d)).toThrow(/kind cannot change/);
  expect(() => defineSequence({ name: "d", start: 5 }, now, d)).toThrow(/start cannot change/);
});

test("a daily period is the calendar day in the sequence's zone", () => {
  const shanghai = { period: "daily" as const, timeZone: "Asia/Shanghai" };
  expect(periodOf(shanghai, Date.parse("2026-11-21T15:59:59.999Z"))).toBe("20261121");
  expect(periodOf(shanghai, Date.parse("2026-11-21T16:00:00Z"))).toBe("20261122"); // midnight in UTC+8
  expect(periodOf({ period: "daily", timeZone: "America/New_York" }, Date.parse("2026-11-22T04:59:59Z"))).toBe("20261121");
  expect(periodOf({ period: "never", timeZone: null }, Date.now())).toBeNull();
  expect(periodOf({ period: "monthly", timeZone: "Asia/Shanghai" }, Date.parse("2026-11-30T16:00:00Z"))).toBe("202612");
  expect(periodOf({ period: "yearly", timeZone: "Asia/Shanghai" }, Date.parse("2026-12-31T15:59:59Z"))).toBe("2026");
  expect(periodOf({ period: "yearly", timeZone: "Asia/Shanghai" }, Date.parse("2026-12-31T16:00:00Z"))).toBe("2027");
});

test("formatted definitions: the period follows the format, finer periods and wide maxValues are refused, the format is fixed", () => {
  const f = (input: Omit<SequenceInput, "name">) => defineSequence({ name: "f", kind: "formatted", ...input }, now);
  expect(f({ format: "{yyyy}{MM}{dd}{seq:5}" })).toMatchObject({ period: "daily", timeZone: "UTC", maxValue: 99999n, overflow: "refuse" });
  expect(f({ format: "{yy}{MM}-{seq}" })).toMatchObject({ period: "monthly", maxValue: MAX_COUNTER });
  expect(f({ format: "QJ{seq:6}", overflow: "widen" })).toMatchObject({ period: "never", maxValue: MAX_COUNTER });
  expect(f({ format: "{yyyy}{MM}{dd}{seq:5}", period: "yearly" }).period).toBe("yearly");
  expect(() => f({ format: "{yyyy}{MM}-{seq:5}", period: "daily" })).toThrow(
    /period daily restarts the serial more often[\s\S]*values would repeat/,
  );
  expect(() => f({ format: "QJ{seq:3}", maxValue: 5000 })).toThrow(/maxValue 5000 does not fit the format \(at most 999\)/);
  expect(() => f({})).toThrow(/format is required/);
  expect(() => f({ format: "{seq}{seq}{check:nope}", period: "hourly", overflow: "grow" })).toThrow(
    /overflow must be one of refuse, widen[\s\S]*format: /,
  );
  const d = f({ format: "QJ{seq:6}" });
  expect(() => defineSequence({ name: "f", format: "QX{seq:6}" }, now, d)).toThrow(/format cannot change/);
  expect(defineSequence({ name: "f", overflow: "widen", maxValue: 10_000_000 }, now, d)).toMatchObject({
    overflow: "widen",
    maxValue: 10_000_000n,
  });
  expect(() => defineSequence({ name: "m", format: "{seq}" }, now)).toThrow(/format does not apply to monotonic sequences/);
  expect(() => f({ format: "QJ{seq:6}", keyVersion: 2 })).toThrow(/keyVersion applies only to a format that prints \{obf:N\}/);
  const o = f({ format: "QJ{obf:9}", overflow: "widen", keyVersion: 4 });
  expect(o).toMatchObject({ maxValue: 99_999_999n, obfuscation: { digits: 9, keyVersion: 4 } });
  expect(defineSequence({ name: "f", keyVersion: 5 }, now, o).obfuscation).toEqual({ digits: 9, keyVersion: 5 });
  expect(() => f({ format: "QJ{obf:9}", keyVersion: 0 })).toThrow(/keyVersion must be a whole number from 1 to 9/);
});
