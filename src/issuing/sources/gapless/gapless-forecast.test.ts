/**
 * Gapless counters' forecasts on their own (no services): the highest number and the counts the
 * gapless source reports after its inserts, the sample windows they fill, periods and leases; and
 * the source reporting them, over an in-memory store that another writer races.
 */
import { expect, test } from "vitest";
import { defineSequence } from "../../../sequences/definition.js";
import type { GaplessNumber } from "../../../storage/gapless.js";
import { GaplessForecasts } from "./gapless-forecast.js";
import { type GaplessDef, GaplessSource, type GaplessStore, type GaplessWant, gaplessHighest } from "./gapless-source.js";

const NOW = Date.UTC(2026, 10, 28, 12, 0, 0);
const at = new Date(NOW);
const inv = defineSequence({ name: "inv", kind: "formatted", format: "INV{seq:4}", start: 1000, gapless: true }, at);
const daily = defineSequence({ name: "day", kind: "daily", maxValue: "9999", gapless: true }, at);

function clocked() {
  let now = NOW;
  return {
    clock: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

test("left is the max value minus the highest taken; the rate is the closed windows', idle ones included", () => {
  const t = clocked();
  const g = new GaplessForecasts(t.clock);
  expect(g.forecasts()).toEqual([]); // nothing taken here yet: no forecast
  g.taken(inv, null, 1099n, 100);
  let [f] = g.forecasts();
  expect([f?.sequence, f?.period, f?.forecast.bound, f?.forecast.left, f?.forecast.total]).toEqual(["inv", null, "seq-width", 8900, 9000]);
  expect(f?.forecast.ratePerSecond).toBeNull(); // no window closed yet
  t.advance(10_000);
  expect(g.closeSample(10_000)).toEqual([{ sequence: "inv", period: null, issued: 100, windowMs: 10_000 }]);
  g.taken(inv, null, 1299n, 200);
  t.advance(10_000);
  g.closeSample(10_000);
  [f] = g.forecasts();
  expect(f?.forecast.left).toBe(8700);
  expect(f?.forecast.ratePerSecond).toBe(15); // 300 numbers over 20 s
  expect(f?.forecast.exhaustionSeconds).toBe(580);
  // A highest lower than known (a stale report) never raises what is left.
  g.taken(inv, null, 1200n, 0);
  expect(g.forecasts()[0]?.forecast.left).toBe(8700);
  for (let i = 0; i < 9; i++) {
    t.advance(10_000);
    expect(g.closeSample(10_000)).toEqual([]); // idle windows are kept, not appended
  }
  expect(g.forecasts()[0]?.forecast.ratePerSecond).toBe(0);
  expect(g.forecasts()[0]?.forecast.exhaustionSeconds).toBeNull();
});

test("a first window counts only the part of it the counter was known; run out at the max value", () => {
  const t = clocked();
  const g = new GaplessForecasts(t.clock);
  t.advance(2000);
  g.taken(inv, null, 9990n, 10);
  t.advance(8000);
  expect(g.closeSample(10_000)).toEqual([{ sequence: "inv", period: null, issued: 10, windowMs: 8000 }]);
  expect(g.forecasts()[0]?.forecast.ratePerSecond).toBe(1.25);
  g.taken(inv, null, 9999n, 9);
  const f = g.forecasts()[0]?.forecast;
  expect([f?.left, f?.exhaustionSeconds]).toEqual([0, 0]);
});

test("a restarting sequence: the current period only; a late take of an ended one is not kept", () => {
  const g = new GaplessForecasts(clocked().clock);
  g.taken(daily, "20261127", 500n, 500);
  g.taken(daily, "20261128", 20n, 20);
  g.taken(daily, "20261127", 501n, 1);
  expect(g.forecasts().map((f) => [f.period, f.forecast.left])).toEqual([["20261128", 9979]]);
});

test("a lease that ended forgets its sequences' forecasts", () => {
  const g = new GaplessForecasts(clocked().clock);
  g.taken(inv, null, 1000n, 1);
  g.taken(daily, "20261128", 1n, 1);
  g.forget(new Set(["inv"]));
  expect(g.forecasts().map((f) => f.sequence)).toEqual(["day"]);
});

/** Gapless numbers in memory, as MongoDB's `_id`s hold them: an insert stops at the first number taken. */
function memoryStore() {
  const ids = new Set<string>();
  const id = (s: string, p: string | null, n: bigint) => `${s}/${p ?? "-"}/${n}`;
  const store: GaplessStore = {
    gaplessExists: async (s, p, n) => ids.has(id(s, p, n)),
    insertGapless: async (numbers: GaplessNumber[]) => {
      for (const [i, x] of numbers.entries()) {
        const k = id(x.sequence, x.period, x.number);
        if (ids.has(k)) return i;
        ids.add(k);
      }
      return numbers.length;
    },
    recordGaplessAnswers: async () => new Set(),
    gaplessAnswers: async () => new Map(),
    gaplessSettlements: async () => new Map(),
    settleGapless: async () => ({ won: [], taken: [] }),
    registerGaplessCounter: async () => {},
    serverNow: async () => NOW,
  };
  return { store, take: (s: string, p: string | null, n: bigint) => ids.add(id(s, p, n)) };
}

const want = (count: number): GaplessWant => ({ def: inv as GaplessDef, period: null, count, requestId: "", now: NOW });

test("the source tells the forecasts its inserts' highest and count, also when another writer took numbers first", async () => {
  const m = memoryStore();
  const g = new GaplessForecasts(clocked().clock);
  const source = new GaplessSource(m.store, "w1", g);
  await source.issue([want(5), want(3)]);
  expect(g.forecasts()[0]?.forecast.left).toBe(9999 - 1007);
  expect(await gaplessHighest(m.store, inv, null)).toBe(1007n);
  // A zombie owner took 1008..1011: this insert is refused there, found above them, taken after.
  for (let n = 1008n; n <= 1011n; n++) m.take("inv", null, n);
  await source.issue([want(4)]);
  expect(await gaplessHighest(m.store, inv, null)).toBe(1015n);
  expect(g.forecasts()[0]?.forecast.left).toBe(9999 - 1015);
  expect(g.closeSample(10_000)).toEqual([{ sequence: "inv", period: null, issued: 12, windowMs: 0 }]);
  // Refused past the max value: nothing inserted, the forecast still known.
  const g2 = new GaplessForecasts(clocked().clock);
  const replies = await new GaplessSource(m.store, "w2", g2).issue([{ ...want(9999), def: inv as GaplessDef }]);
  expect([...replies.values()].map((r) => (r instanceof Error ? r.message : "ok"))).toEqual([
    'gapless sequence "inv" reached its max value 9999',
  ]);
  expect(g2.forecasts()[0]?.forecast.left).toBe(9999 - 1015);
});
