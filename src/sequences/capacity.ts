/**
 * Capacity forecasts: how much of a sequence is left before it runs out, and when it runs out at
 * the rate it is used. Pure arithmetic, no I/O: the worker's counters, its snowflake issuer and
 * `idd seq show` bring what they know (numbers left, a measured rate, free worker ids), and the
 * metrics, the status page, `idd status`, `idd seq show` and the capacity warnings all read the
 * forecast made here (docs/operations.md, Capacity forecasts).
 *
 * Ways a sequence runs out (`bound`):
 * - `max-value`: a counter's serial reaches the sequence's max value;
 * - `seq-width`: a formatted sequence under `overflow refuse` whose max value is the largest serial
 *   `{seq:N}` prints;
 * - `obfuscated-domain`: an obfuscated sequence (or `{obf:N}`) whose max value is its FF1 domain's last serial;
 * - `time-bits`: a snowflake layout's time field, which runs out at a fixed instant whatever the rate;
 * - `worker-ids`: a snowflake layout's free worker ids (no time to exhaustion: leases come and go).
 *
 * A sequence that restarts (daily, monthly, yearly periods) is forecast within its current period:
 * when the period ends before the numbers would, it does not run out at this rate (`restartsFirst`).
 */
import { periodOf } from "../core/period.js";
import { kindOf } from "./kinds/table.js";
import type { SequenceDef, SnowflakeDef } from "./sequence-def.js";
import { runsOutAt } from "./snowflake-layout.js";

export const CAPACITY_BOUNDS = ["max-value", "seq-width", "obfuscated-domain", "time-bits", "worker-ids"] as const;
export type CapacityBound = (typeof CAPACITY_BOUNDS)[number];

export interface Forecast {
  bound: CapacityBound;
  /** What is left: numbers (counter bounds), seconds (`time-bits`) or worker ids (`worker-ids`). */
  left: number;
  /** The whole capacity in the same unit: numbers from start to max value, the time field's span, or every worker id. */
  total: number;
  /** left / total, 0 to 1. */
  leftRatio: number;
  /** What is used a second: numbers for counters, 1 for time; null when nothing is measured (worker ids, or no rate yet). */
  ratePerSecond: number | null;
  /** Seconds until nothing is left at that rate; null: not at this rate (idle, restarts first, or not time-bound). */
  exhaustionSeconds: number | null;
  /** The period ends (and the serial restarts) before the numbers would run out at this rate. */
  restartsFirst: boolean;
}

/** Which bound a counter sequence's max value is: the kind's own limit (format width, obfuscated domain) or a chosen max value. */
export function counterBound(def: SequenceDef): CapacityBound {
  const limit = kindOf(def).limit?.(def as never) ?? null;
  if (limit === null || def.maxValue !== limit) return "max-value";
  return def.obfuscation ? "obfuscated-domain" : "seq-width";
}

/** Below this rate (numbers a second) a counter counts as idle: no time to exhaustion. */
const IDLE_RATE = 1e-6;

/**
 * A counter's forecast: `left` numbers it can still issue (max value minus the last number claimed,
 * plus those claimed and not yet issued), used at `ratePerSecond` (null: not measured yet), at `now`.
 */
export function counterForecast(i: {
  def: SequenceDef;
  period: string | null;
  left: bigint;
  ratePerSecond: number | null;
  now: number;
}): Forecast {
  const { def } = i;
  const total = Number(def.maxValue - def.start + 1n);
  const left = Math.max(0, Number(i.left));
  const rate = i.ratePerSecond;
  let exhaustionSeconds = left === 0 ? 0 : rate !== null && rate > IDLE_RATE ? left / rate : null;
  let restartsFirst = false;
  if (exhaustionSeconds !== null && exhaustionSeconds > 0 && i.period !== null) {
    // The serial restarts with the next period: it runs out only if that comes later.
    const at = i.now + exhaustionSeconds * 1000;
    if (!Number.isFinite(at) || at > 8.64e15 || periodOf(def, at) !== i.period) {
      exhaustionSeconds = null;
      restartsFirst = true;
    }
  }
  return {
    bound: counterBound(def),
    left,
    total,
    leftRatio: total > 0 ? left / total : 0,
    ratePerSecond: rate,
    exhaustionSeconds,
    restartsFirst,
  };
}

/**
 * A gapless counter's forecast (docs/design.md §7): its numbers are exactly start..highest in
 * MongoDB and no block is held anywhere, so what is left is the max value minus the `highest`
 * number taken (start - 1 before the first), whoever took it. Bound, rate and periods as counterForecast's.
 */
export function gaplessForecast(i: {
  def: SequenceDef;
  period: string | null;
  highest: bigint;
  ratePerSecond: number | null;
  now: number;
}): Forecast {
  const { highest, ...rest } = i;
  return counterForecast({ ...rest, left: i.def.maxValue - highest });
}

/**
 * A snowflake sequence's forecasts at `now`: its time field (runs out at a fixed instant), and its
 * worker ids when `freeWorkerIds` is known (ids not leased now).
 */
export function snowflakeForecasts(def: Pick<SnowflakeDef, "snowflake">, now: number, freeWorkerIds?: number): Forecast[] {
  const l = def.snowflake;
  const total = (2 ** l.timeBits * l.unitMs) / 1000;
  const left = Math.max(0, (runsOutAt(l).getTime() - now) / 1000);
  const out: Forecast[] = [
    { bound: "time-bits", left, total, leftRatio: left / total, ratePerSecond: 1, exhaustionSeconds: left, restartsFirst: false },
  ];
  if (freeWorkerIds !== undefined) {
    const ids = 2 ** l.workerBits;
    const free = Math.max(0, Math.min(ids, freeWorkerIds));
    out.push({
      bound: "worker-ids",
      left: free,
      total: ids,
      leftRatio: free / ids,
      ratePerSecond: null,
      exhaustionSeconds: free === 0 ? 0 : null,
      restartsFirst: false,
    });
  }
  return out;
}

const DAY_S = 86_400;
const HOUR_S = 3600;
/** Bounds without a time to exhaustion (worker ids) warn below this share left. */
export const LOW_LEFT_RATIO = 0.1;

/**
 * The warning thresholds, seconds to exhaustion, least severe first: `warnDays` (IDD_CAPACITY_WARN_DAYS),
 * then one day and one hour when below it. 0 days: no warnings.
 */
export function warnThresholds(warnDays: number): number[] {
  if (warnDays <= 0) return [];
  const first = warnDays * DAY_S;
  return [first, ...[DAY_S, HOUR_S].filter((s) => s < first)];
}

/**
 * How severe a forecast is under `thresholds` (warnThresholds): 0 fine, k below the k-th threshold,
 * thresholds.length + 1 exhausted (nothing left). A bound without a time to exhaustion is at
 * severity 1 below LOW_LEFT_RATIO.
 */
export function severity(f: Forecast, thresholds: readonly number[]): number {
  if (f.left <= 0 || f.exhaustionSeconds === 0) return thresholds.length + 1;
  if (thresholds.length === 0) return 0;
  if (f.exhaustionSeconds === null) return f.ratePerSecond === null && f.leftRatio < LOW_LEFT_RATIO ? 1 : 0;
  let s = 0;
  thresholds.forEach((t, k) => {
    if ((f.exhaustionSeconds as number) < t) s = k + 1;
  });
  return s;
}

/**
 * The next alarm state of one forecast, from the state it was in: `warn` when it became more severe
 * (log once per step down). It becomes less severe only once the forecast is clear of twice the
 * threshold, so a rate wavering around a threshold does not log at each look.
 */
export function nextAlarm(was: number, f: Forecast, thresholds: readonly number[]): { severity: number; warn: boolean } {
  const s = severity(f, thresholds);
  if (s > was) return { severity: s, warn: true };
  const clear = severity(
    f,
    thresholds.map((t) => t * 2),
  );
  return { severity: Math.max(s, Math.min(was, clear)), warn: false };
}

/** A duration in words for people: "41 s", "12.5 min", "3.2 h", "17 days", "4.1 years". */
export function durationText(seconds: number | null): string {
  if (seconds === null) return "never at this rate";
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 2 * HOUR_S) return `${(seconds / 60).toFixed(1)} min`;
  if (seconds < 2 * DAY_S) return `${(seconds / HOUR_S).toFixed(1)} h`;
  if (seconds < 730 * DAY_S) return `${Math.round(seconds / DAY_S)} days`;
  return `${(seconds / (365.25 * DAY_S)).toFixed(1)} years`;
}
