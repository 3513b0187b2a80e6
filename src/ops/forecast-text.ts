/**
 * A capacity forecast (src/sequences/capacity.ts) in words, for people: `idd status`, `idd seq show`
 * and the status page (which shows these texts as the worker computed them, so the page's script
 * holds no forecast arithmetic of its own).
 */
import { durationText, type Forecast } from "../sequences/capacity.js";

const int = (n: number) => Math.round(n).toLocaleString("en-US");
const pct = (r: number) => `${(r * 100).toFixed(r < 0.1 ? 2 : 1)}%`;
/** What a forecast says is left: numbers, time or worker ids, and the share of the whole. */
export function leftText(f: Forecast): string {
  if (f.bound === "time-bits") return `${durationText(f.left)} of time (${pct(f.leftRatio)})`;
  if (f.bound === "worker-ids") return `${f.left} of ${f.total} worker ids`;
  return `${int(f.left)} of ${int(f.total)} to ${f.bound} (${pct(f.leftRatio)})`;
}
/** When a forecast runs out: "RUN OUT", a duration, or why not at this rate. */
export function runsOutText(f: Forecast): string {
  if (f.left <= 0 || f.exhaustionSeconds === 0) return "RUN OUT";
  if (f.exhaustionSeconds !== null) return `in ${durationText(f.exhaustionSeconds)}`;
  if (f.restartsFirst) return "restarts first";
  return f.bound === "worker-ids" ? "-" : f.ratePerSecond === null ? "measuring" : "idle";
}

/** A forecast as `key=value` words for a terminal line (`idd seq show`); `runsOut` in place of runsOutText's. */
export function forecastWords(f: Forecast, runsOut = runsOutText(f)): string {
  const rate = f.ratePerSecond === null ? "-" : `${f.ratePerSecond.toFixed(f.ratePerSecond >= 100 ? 0 : 2)}/s`;
  return `bound=${f.bound} left=${f.left.toFixed(0)} of ${f.total.toFixed(0)} (${pct(f.leftRatio)}) rate=${rate} runs-out=${JSON.stringify(runsOut)}`;
}
