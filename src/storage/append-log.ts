/**
 * Buffers records (grants, samples) and appends them to MongoDB in batches, off the hot path: one
 * insert per `flushMs` or per `maxBatch` records. Records that fail to flush stay buffered (up to
 * `maxBuffered`; beyond that the oldest are dropped and counted) and go with the next flush, `flushMs`
 * later: a full batch does not flush again before then (MongoDB down fails fast, and a retry per push
 * or per failure would spin). Writers
 * that must not lose records (grants) check `full` first and refuse work instead (G3).
 */
import { performance } from "node:perf_hooks";

export interface AppendLogOptions {
  flushMs: number;
  maxBatch: number;
  maxBuffered: number;
  onError: (e: unknown, buffered: number) => void;
}

export class AppendLog<T> {
  readonly #append: (batch: T[]) => Promise<void>;
  readonly #o: AppendLogOptions;
  #buffer: T[] = [];
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  /** After a failed append: when the next one may be tried (monotonic ms: a wall clock step must not move it). */
  #retryAt = 0;
  dropped = 0;

  constructor(append: (batch: T[]) => Promise<void>, o: AppendLogOptions) {
    this.#append = append;
    this.#o = o;
  }

  get buffered(): number {
    return this.#buffer.length;
  }

  /** The buffer reached its bound: MongoDB has not been taking appends for a while. */
  get full(): boolean {
    return this.#buffer.length >= this.#o.maxBuffered;
  }

  push(...records: T[]): void {
    for (const record of records) {
      this.#buffer.push(record);
      if (this.#buffer.length > this.#o.maxBuffered) {
        this.#buffer.shift();
        this.dropped++;
      }
    }
    // A drain in flight takes these records too.
    if (this.#buffer.length >= this.#o.maxBatch && !this.#flushing && performance.now() >= this.#retryAt) void this.flush();
    else this.#timer ??= setTimeout(() => void this.flush(), Math.max(this.#o.flushMs, this.#retryAt - performance.now()));
  }

  /**
   * Appends everything buffered, records pushed meanwhile included; resolves when done or when an
   * append failed (errors are reported, records kept for the next try). One drain at a time: a flush
   * during one waits for it.
   */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#flushing ??= this.#drain().finally(() => {
      this.#flushing = undefined;
    });
    return this.#flushing;
  }

  async #drain(): Promise<void> {
    while (this.#buffer.length > 0) {
      const batch = this.#buffer.splice(0, this.#o.maxBatch);
      try {
        await this.#append(batch);
      } catch (e) {
        this.#buffer.unshift(...batch);
        this.#o.onError(e, this.#buffer.length);
        this.#retryAt = performance.now() + this.#o.flushMs;
        this.#timer ??= setTimeout(() => void this.flush(), this.#o.flushMs);
        return;
      }
    }
  }
}
