/**
 * The request topic's partition count this worker routes by (src/protocol/home-partition.ts). It
 * only grows, as Kafka's does: from the brokers (asked every IDD_TOPIC_REFRESH_MS, and at once when
 * a record shows the count is stale), and from Redis, where the largest count any owner routed by
 * is kept (lua/takeOwner-2.lua). Listeners hear every change: the dispenser drops what it issued
 * under the old count.
 */
import { performance } from "node:perf_hooks";

export interface PartitionCountOptions {
  /** The brokers' count, or undefined when the topic does not exist (yet). */
  fetch: () => Promise<number | undefined>;
  /**
   * Asking the brokers happens at most this often (default 100 ms): a forged header cannot force
   * more, and a worker that just learnt of a record on a new partition is not kept waiting long.
   */
  minRefreshMs?: number;
  /** Monotonic (`performance.now()` by default): a wall clock stepped back must not hold refreshes off for the step. */
  clock?: () => number;
}

export class PartitionCount {
  #value: number;
  readonly #o: Required<PartitionCountOptions>;
  #askedAt = Number.NEGATIVE_INFINITY;
  #asking: Promise<number> | undefined;
  readonly #listeners: ((now: number, was: number) => void)[] = [];

  constructor(initial: number, o: PartitionCountOptions) {
    this.#value = initial;
    this.#o = { minRefreshMs: 100, clock: () => performance.now(), ...o };
  }

  get value(): number {
    return this.#value;
  }

  onChange(listener: (now: number, was: number) => void): void {
    this.#listeners.push(listener);
  }

  /** Takes `n` if it is larger; true when the count changed. */
  raise(n: number): boolean {
    if (!Number.isInteger(n) || n <= this.#value) return false;
    const was = this.#value;
    this.#value = n;
    for (const l of this.#listeners) l(n, was);
    return true;
  }

  /**
   * Asks the brokers (unless asked less than minRefreshMs ago; concurrent callers share one
   * request) and returns the count. A failed request keeps the count as it is.
   */
  refresh(): Promise<number> {
    if (this.#asking) return this.#asking;
    if (this.#o.clock() - this.#askedAt < this.#o.minRefreshMs) return Promise.resolve(this.#value);
    this.#askedAt = this.#o.clock();
    this.#asking = this.#o
      .fetch()
      .then(
        (n) => {
          if (n !== undefined) this.raise(n);
          return this.#value;
        },
        () => this.#value,
      )
      .finally(() => {
        this.#asking = undefined;
      });
    return this.#asking;
  }
}
