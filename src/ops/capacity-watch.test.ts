import { Writable } from "node:stream";
import { pino } from "pino";
import { expect, test } from "vitest";
import { Instrumentation } from "../core/events.js";
import type { CounterSnapshot } from "../issuing/sources/counter/counter.js";
import type { Forecast } from "../sequences/capacity.js";
import { CapacityWatch, currentForecasts } from "./capacity-watch.js";
import { createMetrics } from "./metrics.js";

const forecast = (left: number, exhaustionSeconds: number | null, bound: Forecast["bound"] = "seq-width"): Forecast => ({
  bound,
  left,
  total: 9999,
  leftRatio: left / 9999,
  ratePerSecond: exhaustionSeconds === null ? 0 : left / Math.max(exhaustionSeconds, 1e-9),
  exhaustionSeconds,
  restartsFirst: false,
});

const counter = (sequence: string, period: string | null, f: Forecast | null): CounterSnapshot => ({
  sequence,
  period,
  inMemory: 0n,
  headroom: 0n,
  ratePerSecond: 0,
  blockSize: 100,
  forecast: f,
});

function logged() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { logger: pino({ level: "info" }, stream), lines };
}

test("the current period's counter only, and every snowflake forecast", () => {
  const fs = currentForecasts(
    [counter("d", "20261127", forecast(10, 5)), counter("d", "20261128", forecast(20, 50)), counter("cold", null, null)],
    [{ sequence: "s", forecasts: [forecast(100, 100, "time-bits"), forecast(3, null, "worker-ids")] }],
  );
  expect(fs.map((f) => [f.sequence, f.period, f.forecast.bound, f.forecast.left])).toEqual([
    ["d", "20261128", "seq-width", 20],
    ["s", null, "time-bits", 100],
    ["s", null, "worker-ids", 3],
  ]);
});

test("gapless counters' forecasts are the watch's too: listed, and warned of like a counter's", async () => {
  const { logger, lines } = logged();
  const gapless = [{ sequence: "inv", period: "20261128", forecast: forecast(50, 3000, "max-value") }];
  expect(currentForecasts([], [], gapless)).toEqual(gapless);
  const watch = new CapacityWatch({
    counters: () => [],
    snowflakes: () => [],
    gapless: () => gapless,
    warnDays: 30,
    everyMs: 1000,
    logger,
  });
  expect(watch.forecasts().map((f) => [f.sequence, f.period, f.forecast.left])).toEqual([["inv", "20261128", 50]]);
  await watch.look();
  expect(lines.map((l) => [l.level, l.sequence, l.bound, l.thresholdSeconds])).toEqual([[40, "inv", "max-value", 3600]]);
});

test("a warning per threshold crossed, an error once run out, nothing while it holds", async () => {
  const { logger, lines } = logged();
  let f = forecast(9000, 40 * 86_400);
  const watch = new CapacityWatch({ counters: () => [counter("qj", null, f)], snowflakes: () => [], warnDays: 30, everyMs: 1000, logger });
  await watch.look();
  expect(lines).toHaveLength(0);
  f = forecast(5000, 20 * 86_400);
  await watch.look();
  await watch.look();
  f = forecast(100, 50);
  await watch.look();
  f = forecast(0, 0);
  await watch.look();
  await watch.look();
  expect(lines.map((l) => [l.level, l.msg, l.thresholdSeconds ?? l.code])).toEqual([
    [40, "sequence qj runs out in 20 days at its current rate (serials its {seq:N} width prints)", 30 * 86_400],
    [40, "sequence qj runs out in 50 s at its current rate (serials its {seq:N} width prints)", 3600],
    [50, "sequence qj has run out of serials its {seq:N} width prints", "SEQUENCE_EXHAUSTED"],
  ]);
  expect(lines[1]).toMatchObject({ component: "capacity", sequence: "qj", bound: "seq-width", left: 100, exhaustionSeconds: 50 });
  expect(typeof lines[1]?.runsOutAt).toBe("string");
});

test("snowflake worker ids warn under 10% free; the time field like any forecast", async () => {
  const { logger, lines } = logged();
  const ids = { ...forecast(50, null, "worker-ids"), total: 1024, leftRatio: 50 / 1024, ratePerSecond: null };
  const watch = new CapacityWatch({
    counters: () => [],
    snowflakes: () => [{ sequence: "snow", forecasts: [forecast(86_400 * 400, 86_400 * 400, "time-bits"), ids] }],
    warnDays: 30,
    everyMs: 1000,
    logger,
  });
  await watch.look();
  expect(lines.map((l) => [l.level, l.msg])).toEqual([[40, "sequence snow has 50 of 1024 snowflake worker ids free"]]);
});

test("IDD_CAPACITY_WARN_DAYS 0: no warnings, still an error once run out", async () => {
  const { logger, lines } = logged();
  let f = forecast(100, 50);
  const watch = new CapacityWatch({ counters: () => [counter("qj", null, f)], snowflakes: () => [], warnDays: 0, everyMs: 1000, logger });
  await watch.look();
  f = forecast(0, 0);
  await watch.look();
  expect(lines.map((l) => l.level)).toEqual([50]);
});

test("/metrics: exhaustion seconds, share and numbers left per sequence and bound; past the cap, the worst as other", async () => {
  const forecasts = [
    { sequence: "a", period: null, forecast: forecast(2000, 20) },
    { sequence: "b", period: null, forecast: forecast(50, null, "max-value") },
    { sequence: "c", period: null, forecast: forecast(10, 5, "max-value") },
    { sequence: "d", period: null, forecast: forecast(700, 70, "max-value") },
  ];
  const registry = createMetrics({
    events: new Instrumentation(),
    counters: () => [],
    roundTrips: () => ({ redis: 0, mongodb: 0 }),
    maxSequences: 2,
    forecasts: () => forecasts,
  });
  const text = await registry.metrics();
  const lines = text.split("\n").filter((l) => l.startsWith("idd_sequence_"));
  expect(lines).toEqual([
    'idd_sequence_exhaustion_seconds{sequence="a",bound="seq-width"} 20',
    'idd_sequence_exhaustion_seconds{sequence="b",bound="max-value"} +Inf',
    'idd_sequence_exhaustion_seconds{sequence="other",bound="max-value"} 5',
    `idd_sequence_capacity_left_ratio{sequence="a",bound="seq-width"} ${2000 / 9999}`,
    `idd_sequence_capacity_left_ratio{sequence="b",bound="max-value"} ${50 / 9999}`,
    `idd_sequence_capacity_left_ratio{sequence="other",bound="max-value"} ${10 / 9999}`,
    'idd_sequence_capacity_left{sequence="a",bound="seq-width"} 2000',
    'idd_sequence_capacity_left{sequence="b",bound="max-value"} 50',
    'idd_sequence_capacity_left{sequence="other",bound="max-value"} 10',
  ]);
});
