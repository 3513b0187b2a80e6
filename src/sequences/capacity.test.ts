import { expect, test } from "vitest";
import {
  counterBound,
  counterForecast,
  durationText,
  type Forecast,
  gaplessForecast,
  nextAlarm,
  severity,
  snowflakeForecasts,
  warnThresholds,
} from "./capacity.js";
import { defineSequence } from "./definition.js";
import type { SnowflakeDef } from "./sequence-def.js";

const NOW = Date.UTC(2026, 10, 28, 12, 0, 0);
const at = new Date(NOW);

test("the bound names what the max value is: a chosen one, the {seq:N} width, the obfuscated domain", () => {
  expect(counterBound(defineSequence({ name: "m" }, at))).toBe("max-value");
  expect(counterBound(defineSequence({ name: "m", maxValue: "500" }, at))).toBe("max-value");
  expect(counterBound(defineSequence({ name: "f", kind: "formatted", format: "QJ{seq:4}" }, at))).toBe("seq-width");
  // A max value below the width's is the operator's choice, not the width.
  expect(counterBound(defineSequence({ name: "f", kind: "formatted", format: "QJ{seq:4}", maxValue: "99" }, at))).toBe("max-value");
  expect(counterBound(defineSequence({ name: "f", kind: "formatted", format: "QJ{seq:4}", overflow: "widen" }, at))).toBe("max-value");
  expect(counterBound(defineSequence({ name: "o", kind: "obfuscated", digits: 7 }, at))).toBe("obfuscated-domain");
  expect(counterBound(defineSequence({ name: "o", kind: "formatted", format: "{obf:8}" }, at))).toBe("obfuscated-domain");
});

test("a {seq:4} counter: numbers left, share left and seconds to exhaustion at the rate", () => {
  const def = defineSequence({ name: "f", kind: "formatted", format: "QJ{seq:4}" }, at);
  const f = counterForecast({ def, period: null, left: 2000n, ratePerSecond: 100, now: NOW });
  expect(f).toEqual({
    bound: "seq-width",
    left: 2000,
    total: 9999,
    leftRatio: 2000 / 9999,
    ratePerSecond: 100,
    exhaustionSeconds: 20,
    restartsFirst: false,
  });
});

test("idle, not measured yet, and exhausted", () => {
  const def = defineSequence({ name: "m", maxValue: "1000" }, at);
  expect(counterForecast({ def, period: null, left: 10n, ratePerSecond: 0, now: NOW }).exhaustionSeconds).toBeNull();
  expect(counterForecast({ def, period: null, left: 10n, ratePerSecond: null, now: NOW }).exhaustionSeconds).toBeNull();
  const out = counterForecast({ def, period: null, left: 0n, ratePerSecond: 0, now: NOW });
  expect([out.left, out.exhaustionSeconds, out.leftRatio]).toEqual([0, 0, 0]);
  // More left than the capacity says (a lowered max value) is never negative; less than none is none.
  expect(counterForecast({ def, period: null, left: -5n, ratePerSecond: 1, now: NOW }).left).toBe(0);
});

test("a daily counter runs out only if its day lasts longer than its numbers", () => {
  const def = defineSequence({ name: "d", kind: "daily", maxValue: "9999" }, at); // UTC days
  const period = "20261128"; // 12 hours of the day left at NOW
  const soon = counterForecast({ def, period, left: 3600n, ratePerSecond: 1, now: NOW });
  expect([soon.exhaustionSeconds, soon.restartsFirst]).toEqual([3600, false]);
  const late = counterForecast({ def, period, left: 86_400n, ratePerSecond: 1, now: NOW });
  expect([late.exhaustionSeconds, late.restartsFirst]).toEqual([null, true]);
});

test("gapless: what is left is the max value minus the highest number taken, under the counter's bound", () => {
  const def = defineSequence({ name: "g", kind: "formatted", format: "INV{seq:4}", start: "1000", gapless: true }, at);
  const f = gaplessForecast({ def, period: null, highest: 8999n, ratePerSecond: 10, now: NOW });
  expect(f).toEqual({
    bound: "seq-width",
    left: 1000,
    total: 9000,
    leftRatio: 1000 / 9000,
    ratePerSecond: 10,
    exhaustionSeconds: 100,
    restartsFirst: false,
  });
  // Before the first number (highest is start - 1): all of it; at the max value: run out.
  expect(gaplessForecast({ def, period: null, highest: 999n, ratePerSecond: null, now: NOW }).left).toBe(9000);
  const out = gaplessForecast({ def, period: null, highest: 9999n, ratePerSecond: 0, now: NOW });
  expect([out.left, out.exhaustionSeconds]).toEqual([0, 0]);
  const daily = defineSequence({ name: "d", kind: "daily", maxValue: "99999", gapless: true }, at);
  const late = gaplessForecast({ def: daily, period: "20261128", highest: 9999n, ratePerSecond: 1, now: NOW });
  expect([late.bound, late.left, late.exhaustionSeconds, late.restartsFirst]).toEqual(["max-value", 90_000, null, true]);
});

test("snowflake: the time field's seconds left, and free worker ids", () => {
  const def = {
    snowflake: { epochMs: NOW - 1000 * 1000, unitMs: 1000, timeBits: 11, workerBits: 2, seqBits: 12 },
  } satisfies Pick<SnowflakeDef, "snowflake">;
  const [time, ids] = snowflakeForecasts(def, NOW, 1);
  expect(time).toMatchObject({ bound: "time-bits", left: 1048, total: 2048, ratePerSecond: 1, exhaustionSeconds: 1048 });
  expect(ids).toMatchObject({ bound: "worker-ids", left: 1, total: 4, leftRatio: 0.25, exhaustionSeconds: null });
  expect(snowflakeForecasts(def, NOW, 0)[1]?.exhaustionSeconds).toBe(0);
  expect(snowflakeForecasts(def, NOW)).toHaveLength(1);
  expect(snowflakeForecasts(def, NOW + 5_000_000)[0]?.left).toBe(0);
});

const forecast = (exhaustionSeconds: number | null, left = 100): Forecast => ({
  bound: "max-value",
  left,
  total: 1000,
  leftRatio: left / 1000,
  ratePerSecond: exhaustionSeconds === null ? 0 : left / exhaustionSeconds,
  exhaustionSeconds,
  restartsFirst: false,
});

test("thresholds: the setting's days, then a day and an hour below it; 0 turns warnings off", () => {
  expect(warnThresholds(30)).toEqual([30 * 86_400, 86_400, 3600]);
  expect(warnThresholds(0.5)).toEqual([43_200, 3600]);
  expect(warnThresholds(0)).toEqual([]);
});

test("severity counts the thresholds crossed; nothing left is the most severe", () => {
  const t = warnThresholds(30);
  expect(severity(forecast(null), t)).toBe(0);
  expect(severity(forecast(40 * 86_400), t)).toBe(0);
  expect(severity(forecast(10 * 86_400), t)).toBe(1);
  expect(severity(forecast(600), t)).toBe(3);
  expect(severity(forecast(0, 0), t)).toBe(4);
  expect(severity(forecast(0, 0), [])).toBe(1);
  expect(severity(forecast(600), [])).toBe(0);
  const ids = (free: number): Forecast => ({ ...forecast(null, free), ratePerSecond: null, total: 1024, leftRatio: free / 1024 });
  expect(severity(ids(500), t)).toBe(0);
  expect(severity(ids(50), t)).toBe(1);
});

test("an alarm warns once per step down and re-arms only clear of twice the threshold", () => {
  const t = warnThresholds(30);
  let s = 0;
  const look = (f: Forecast) => {
    const n = nextAlarm(s, f, t);
    s = n.severity;
    return n.warn;
  };
  expect(look(forecast(10 * 86_400))).toBe(true); // under 30 days
  expect(look(forecast(10 * 86_400))).toBe(false);
  expect(look(forecast(31 * 86_400))).toBe(false); // wavering just above: still armed low
  expect(look(forecast(20 * 86_400))).toBe(false);
  expect(look(forecast(61 * 86_400))).toBe(false); // clear of twice 30 days: re-armed
  expect(s).toBe(0);
  expect(look(forecast(29 * 86_400))).toBe(true);
  expect(look(forecast(3000))).toBe(true); // straight to under an hour: one warning
  expect(look(forecast(0, 0))).toBe(true); // exhausted
  expect(look(forecast(0, 0))).toBe(false);
});

test("durations in words", () => {
  expect(durationText(null)).toBe("never at this rate");
  expect(durationText(41.4)).toBe("41 s");
  expect(durationText(750)).toBe("12.5 min");
  expect(durationText(3 * 3600)).toBe("3.0 h");
  expect(durationText(17 * 86_400)).toBe("17 days");
  expect(durationText(4.1 * 365.25 * 86_400)).toBe("4.1 years");
});
