/** Periods: `yyyyMMdd` in the sequence's time zone for daily sequences, null for monotonic ones. */
import type { SequenceDef } from "./definition.js";

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat("en-CA", { timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit" });
    formatters.set(tz, f);
  }
  return f;
}

export function dayIn(tz: string, epochMs: number): string {
  const parts = formatter(tz).formatToParts(epochMs);
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? "";
  return `${get("year")}${get("month")}${get("day")}`;
}

export function periodOf(def: Pick<SequenceDef, "kind" | "timeZone">, epochMs: number): string | null {
  return def.kind === "daily" ? dayIn(def.timeZone ?? "UTC", epochMs) : null;
}
