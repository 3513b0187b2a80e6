/**
 * The capacity forecasts of the sequences one worker serves (src/sequences/capacity.ts), for
 * `/metrics`, `/status` and the log. Sources cost no I/O per number: counters measure their rate
 * over their last sample windows (Counter.closeSample, the windows the allocator appends to
 * MongoDB as `samples`), gapless counters the same way from what their inserts tell
 * (src/issuing/sources/gapless/gapless-forecast.ts), and the snowflake issuer's free worker ids are counted once per look.
 *
 * Every IDD_SAMPLE_MS the watch looks at every forecast and logs a warning when one crosses a
 * threshold of IDD_CAPACITY_WARN_DAYS (then one day, then one hour; capacity.ts warnThresholds),
 * and an error when a sequence has run out. One line per step down, not one per look: a forecast
 * re-arms only once clear of twice the threshold (capacity.ts nextAlarm). Alarm states are kept for
 * the forecasts of the last look only, so they are bounded by the sequences this worker serves.
 */
import type { Logger } from "pino";
import type { CounterSnapshot } from "../issuing/sources/counter/counter.js";
import { type CapacityBound, durationText, type Forecast, nextAlarm, warnThresholds } from "../sequences/capacity.js";

/** One forecast of one sequence: of its current period's counter (a gapless one too), or of its snowflake layout. */
export interface SequenceForecast {
  sequence: string;
  period: string | null;
  forecast: Forecast;
}

export interface CapacitySources {
  counters: () => CounterSnapshot[];
  snowflakes: () => { sequence: string; forecasts: Forecast[] }[];
  /** The gapless counters' forecasts, their current periods' only (src/issuing/sources/gapless/gapless-forecast.ts). */
  gapless?: () => SequenceForecast[];
  /** Refreshes what a look needs from Redis (free worker ids); failures keep the last values. */
  refresh?: () => Promise<void>;
  warnDays: number;
  everyMs: number;
  logger: Logger;
}

/**
 * The forecasts of the counters' current periods, of the snowflake sequences and of the gapless
 * counters (current periods already): a sequence that restarts may hold the counter of a period
 * that just ended too; only the latest one can run out.
 */
export function currentForecasts(
  counters: readonly CounterSnapshot[],
  snowflakes: readonly { sequence: string; forecasts: Forecast[] }[],
  gapless: readonly SequenceForecast[] = [],
): SequenceForecast[] {
  const latest = new Map<string, CounterSnapshot>();
  for (const c of counters) {
    const was = latest.get(c.sequence);
    if (c.forecast && (!was || (c.period ?? "") > (was.period ?? ""))) latest.set(c.sequence, c);
  }
  const out: SequenceForecast[] = [];
  for (const c of latest.values()) if (c.forecast) out.push({ sequence: c.sequence, period: c.period, forecast: c.forecast });
  for (const s of snowflakes) for (const forecast of s.forecasts) out.push({ sequence: s.sequence, period: null, forecast });
  out.push(...gapless);
  return out;
}

const WHAT: Record<CapacityBound, string> = {
  "max-value": "numbers before its max value",
  "seq-width": "serials its {seq:N} width prints",
  "obfuscated-domain": "serials of its obfuscated domain",
  "time-bits": "time its snowflake layout's time field counts",
  "worker-ids": "snowflake worker ids free",
};

export class CapacityWatch {
  readonly #s: CapacitySources;
  readonly #thresholds: number[];
  readonly #log: Logger;
  /** Alarm severity per (sequence, period, bound), of the last look's forecasts only. */
  #alarms = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #looking: Promise<void> | undefined;

  constructor(s: CapacitySources) {
    this.#s = s;
    this.#thresholds = warnThresholds(s.warnDays);
    this.#log = s.logger.child({ component: "capacity" });
  }

  /** What the worker's sequences have left, now. */
  forecasts(): SequenceForecast[] {
    return currentForecasts(this.#s.counters(), this.#s.snowflakes(), this.#s.gapless?.() ?? []);
  }

  start(): void {
    this.#timer ??= setInterval(() => void this.look(), this.#s.everyMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#looking;
  }

  /** Refreshes the sources, then logs every forecast that stepped down a threshold since the last look. */
  look(): Promise<void> {
    this.#looking ??= this.#look().finally(() => {
      this.#looking = undefined;
    });
    return this.#looking;
  }

  async #look(): Promise<void> {
    await this.#s.refresh?.().catch(() => {});
    const alarms = new Map<string, number>();
    const now = Date.now();
    for (const f of this.forecasts()) {
      const key = `${f.sequence}\u0000${f.period ?? ""}\u0000${f.forecast.bound}`;
      const next = nextAlarm(this.#alarms.get(key) ?? 0, f.forecast, this.#thresholds);
      if (next.severity > 0) alarms.set(key, next.severity);
      if (next.warn) this.#say(f, next.severity, now);
    }
    this.#alarms = alarms;
  }

  #say(f: SequenceForecast, severity: number, now: number): void {
    const x = f.forecast;
    const fields = {
      sequence: f.sequence,
      period: f.period,
      bound: x.bound,
      left: x.left,
      total: x.total,
      leftRatio: Number(x.leftRatio.toFixed(6)),
      ratePerSecond: x.ratePerSecond,
      exhaustionSeconds: x.exhaustionSeconds,
      ...(x.exhaustionSeconds !== null && { runsOutAt: new Date(now + x.exhaustionSeconds * 1000).toISOString() }),
    };
    if (severity > this.#thresholds.length) {
      this.#log.error({ ...fields, code: "SEQUENCE_EXHAUSTED" }, `sequence ${f.sequence} has run out of ${WHAT[x.bound]}`);
      return;
    }
    if (x.exhaustionSeconds === null) {
      // Worker ids: no time to exhaustion, a share left (capacity.ts LOW_LEFT_RATIO).
      this.#log.warn(fields, `sequence ${f.sequence} has ${x.left} of ${x.total} ${WHAT[x.bound]}`);
      return;
    }
    const threshold = this.#thresholds[severity - 1];
    this.#log.warn(
      { ...fields, ...(threshold !== undefined && { thresholdSeconds: threshold }) },
      `sequence ${f.sequence} runs out in ${durationText(x.exhaustionSeconds)} at its current rate (${WHAT[x.bound]})`,
    );
  }
}
