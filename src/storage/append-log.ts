/**
 * Buffers records (grants, samples) and appends them to MongoDB in batches, off the hot path: one
 * insert per `flushMs` or per `maxBatch` records. Records that fail to flush stay buffered (up to
 * `maxBuffered`; beyond that the oldest are dropped and counted) and go with the next flush. Writers
 * that must not lose records (grants) check `full` first and refuse work instead (G3).
 */
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

  push(record: T): void {
    this.#buffer.push(record);
    if (this.#buffer.length > this.#o.maxBuffered) {
      this.#buffer.shift();
      this.dropped++;
    }
    if (this.#buffer.length >= this.#o.maxBatch) void this.flush();
    else this.#timer ??= setTimeout(() => void this.flush(), this.#o.flushMs);
  }

  /** Appends everything buffered; resolves when done (errors are reported, records kept). */
  async flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#flushing) await this.#flushing;
    if (this.#buffer.length === 0) return;
    const batch = this.#buffer.splice(0, this.#o.maxBatch);
    this.#flushing = this.#append(batch)
      .catch((e: unknown) => {
        this.#buffer.unshift(...batch);
        this.#o.onError(e, this.#buffer.length);
        this.#timer ??= setTimeout(() => void this.flush(), this.#o.flushMs);
      })
      .finally(() => {
        this.#flushing = undefined;
      });
    await this.#flushing;
    if (this.#buffer.length >= this.#o.maxBatch) await this.flush();
  }
}
