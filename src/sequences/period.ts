/**
 * Periods: a sequence whose numbers restart (at `start`) every day, month or year counts each
 * period on its own counter. The period of an instant is its calendar date in the sequence's time
 * zone, cut to the period's length: `yyyyMMdd`, `yyyyMM` or `yyyy`; null for sequences that never
 * restart. Keys of one sequence all have the same length, so they sort in time order.
 */
import type { SequenceDef } from "./definition.js";

export const PERIODS = ["never", "daily", "monthly", "yearly"] as const;
export type Period = (typeof PERIODS)[number];

const KEY_LENGTH: Record<Period, number> = { never: 0, daily: 8, monthly: 6, yearly: 4 };

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat("en-CA", { timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit" });
    formatters.set(tz, f);
  }
  return f;
}

/** `yyyyMMdd` of an instant in an IANA time zone. */
export function dayIn(tz: string, epochMs: number): string {
  const parts = formatter(tz).formatToParts(epochMs);
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? "";
  return `${get("year")}${get("month")}${get("day")}`;
}

export function periodKey(period: Period, tz: string | null, epochMs: number): string | null {
  return period === "never" ? null : dayIn(tz ?? "UTC", epochMs).slice(0, KEY_LENGTH[period]);
}

/** The period of `epochMs` for a sequence: the counter its numbers come from. */
export function periodOf(def: Pick<SequenceDef, "period" | "timeZone">, epochMs: number): string | null {
  return periodKey(def.period, def.timeZone, epochMs);
}
