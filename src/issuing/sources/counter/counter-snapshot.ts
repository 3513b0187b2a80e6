/** What one counter (counter.ts) holds, as the metrics, the status page and the capacity watch read it. */
import { counterForecast, type Forecast } from "../../../sequences/capacity.js";
import type { SequenceDef } from "../../../sequences/definition.js";

export interface CounterSnapshot {
  sequence: string;
  period: string | null;
  /** Unissued numbers in this worker's memory. */
  inMemory: bigint;
  /** Numbers reserved in MongoDB above what this worker claimed: what it can still claim from Redis if MongoDB goes down. */
  headroom: bigint;
  /** Numbers a second this worker issued lately. */
  ratePerSecond: number;
  /** The size of the next block. */
  blockSize: number;
  /**
   * What is left of the counter before it runs out and when, at the rate of its last sample windows
   * (src/sequences/capacity.ts); null until its first block: Redis has not said where it stands.
   */
  forecast: Forecast | null;
}

/** What `counterSnapshot` reads of a counter. */
export interface CounterState {
  def: SequenceDef;
  period: string | null;
  available: bigint;
  /** The last number claimed from Redis (-1: none yet). */
  lastClaimed: bigint;
  /** The reservation's max. */
  max: bigint;
  ratePerSecond: number;
  blockSize: number;
  /** The rate over the last sample windows, for the forecast (null: none closed yet). */
  windowsPerSecond: number | null;
  /** The wall clock (Unix ms), for the forecast's dates. */
  now: number;
}

export function counterSnapshot(c: CounterState): CounterSnapshot {
  return {
    sequence: c.def.name,
    period: c.period,
    inMemory: c.available,
    headroom: c.max > c.lastClaimed ? c.max - c.lastClaimed : 0n,
    ratePerSecond: c.ratePerSecond,
    blockSize: c.blockSize,
    forecast:
      c.lastClaimed < 0n
        ? null
        : counterForecast({
            def: c.def,
            period: c.period,
            // One issuer per sequence (I3): what this worker may still issue is what is left.
            left: c.def.maxValue - c.lastClaimed + c.available,
            ratePerSecond: c.windowsPerSecond,
            now: c.now,
          }),
  };
}
