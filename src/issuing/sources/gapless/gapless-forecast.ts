/**
 * The capacity forecasts of the gapless counters one worker issues (src/sequences/capacity.ts
 * gaplessForecast; docs/operations.md, Capacity forecasts). Gapless numbers hold no Redis counter
 * and no block, so the forecast comes from what the gapless source learns anyway, at no I/O per
 * number: the highest number it took (its insert's last; MongoDB's high mark, since a counter's
 * numbers are exactly start..highest) and how many it took, counted into the same sample windows
 * counters keep (src/issuing/sources/sample-windows.ts), closed by the allocator's sampler each
 * IDD_SAMPLE_MS and appended with the counters' samples to MongoDB's `samples` (`idd seq show`'s rate).
 *
 * Memory is bounded by the sequences this worker issues: one entry per (sequence, period), the
 * earlier periods of a sequence dropped when a later one is taken, and a sequence's entries
 * forgotten when the lease it was issued under ends (the new owner forecasts it).
 */

import { type Forecast, gaplessForecast } from "../../../sequences/capacity.js";
import type { SequenceDef } from "../../../sequences/sequence-def.js";
import { SampleWindows } from "../sample-windows.js";

/** One counter's forecast, as the capacity watch, /metrics and /status read it. */
export interface GaplessCounterForecast {
  sequence: string;
  period: string | null;
  forecast: Forecast;
}

/** A closed window of a counter that took numbers in it (a `samples` row without worker and time). */
export interface GaplessWindow {
  sequence: string;
  period: string | null;
  issued: number;
  windowMs: number;
}

interface Entry {
  def: SequenceDef;
  period: string | null;
  highest: bigint;
  /** Numbers taken since the last window closed. */
  issued: number;
  readonly windows: SampleWindows;
  readonly createdAt: number;
}

export class GaplessForecasts {
  readonly #clock: () => number;
  readonly #entries = new Map<string, Entry>();

  constructor(clock: () => number = Date.now) {
    this.#clock = clock;
  }

  /**
   * `count` numbers of (def, period) were taken, the highest taken now being at least `highest`.
   * Memory only: called on the request path.
   */
  taken(def: SequenceDef, period: string | null, highest: bigint, count: number): void {
    const key = `${def.name}\u0000${period ?? ""}`;
    let e = this.#entries.get(key);
    if (!e) {
      if (period !== null && !this.#latest(def.name, period)) return; // a late take of a period that ended here already
      e = { def, period, highest, issued: 0, windows: new SampleWindows(), createdAt: this.#clock() };
      this.#entries.set(key, e);
    }
    e.def = def; // the definition in force (its max value may have been raised)
    if (highest > e.highest) e.highest = highest;
    e.issued += count;
  }

  /**
   * Ends a sample window of `ms` (the allocator's sampler, as Counter.closeSample): every counter
   * keeps it, over the part of it the counter was known here; returns those that took numbers in it.
   */
  closeSample(ms: number): GaplessWindow[] {
    const now = this.#clock();
    const out: GaplessWindow[] = [];
    for (const e of this.#entries.values()) {
      const issued = e.issued;
      e.issued = 0;
      const windowMs = Math.min(ms, now - e.createdAt);
      e.windows.close(windowMs, issued);
      if (issued > 0) out.push({ sequence: e.def.name, period: e.period, issued, windowMs });
    }
    return out;
  }

  /** The lease these sequences were issued under ended: another worker issues them now. */
  forget(sequences: Iterable<string>): void {
    const gone = new Set(sequences);
    for (const [key, e] of this.#entries) if (gone.has(e.def.name)) this.#entries.delete(key);
  }

  /** The forecast of every gapless counter this worker took numbers of (the current period's, for those that restart). */
  forecasts(): GaplessCounterForecast[] {
    const now = this.#clock();
    return [...this.#entries.values()].map((e) => ({
      sequence: e.def.name,
      period: e.period,
      forecast: gaplessForecast({ def: e.def, period: e.period, highest: e.highest, ratePerSecond: e.windows.perSecond, now }),
    }));
  }

  /**
   * Whether `period` is the sequence's latest here; the earlier ones are dropped: only the current
   * period can run out (the serial restarts with the next).
   */
  #latest(name: string, period: string): boolean {
    for (const [key, e] of this.#entries) {
      if (e.def.name !== name || e.period === null) continue;
      if (e.period > period) return false;
      this.#entries.delete(key);
    }
    return true;
  }
}
