/**
 * Periods: a sequence whose numbers restart (at `start`) every day, month or year counts each
 * period on its own counter. The period of an instant is its calendar date in the sequence's time
 * zone, cut to the period's length: `yyyyMMdd`, `yyyyMM` or `yyyy`; null for sequences that never
 * restart. Keys of one sequence all have the same length, so they sort in time order.
 */
import { dateStrings } from "./date-parts.js";

export const PERIODS = ["never", "daily", "monthly", "yearly"] as const;
export type Period = (typeof PERIODS)[number];

export function periodKey(period: Period, tz: string | null, epochMs: number): string | null {
  if (period === "never") return null;
  const d = dateStrings(tz ?? "UTC", epochMs); // computed once per second and zone
  return period === "yearly" ? d.yyyy : period === "monthly" ? `${d.yyyy}${d.MM}` : `${d.yyyy}${d.MM}${d.dd}`;
}

/** The period of `epochMs` for a sequence: the counter its numbers come from. */
export function periodOf(def: { period: Period; timeZone: string | null }, epochMs: number): string | null {
  return periodKey(def.period, def.timeZone, epochMs);
}
