/** What one counter (counter.ts) holds, as the metrics, the status page and the capacity watch read it. */
import type { Forecast } from "../sequences/capacity.js";

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
