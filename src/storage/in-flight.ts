/**
 * A bound on the MongoDB operations a process has in flight, sized to the driver's connection pool
 * (./connection.ts). Past the bound an operation waits here, in order, instead of piling onto the
 * pool: the driver gives each checkout only `waitQueueTimeoutMS`, and a slow MongoDB with many new
 * sequences had hundreds of operations queued there, each timing out ("Timed out while checking out
 * a connection from connection pool") after holding its step for seconds.
 *
 * Three lanes:
 * - `critical`: writes of the audit trail and the fences (reservations, grants, gapless numbers,
 *   issuance, releases, definitions) go ahead of every waiting read;
 * - `normal`: reads;
 * - `sheddable`: samples. Never queued: with no slot free they are refused at once (counted in
 *   `shed`); the sample log keeps them for its next flush (its bound drops the oldest, counted too).
 * A queued operation that found no slot within `maxWaitMs` (the step budget) is refused with
 * UNAVAILABLE (counted in `timedOut`): its caller answers or retries, as for MongoDB down; nothing is
 * dropped silently.
 */
import { IddError } from "../core/errors.js";

export type Lane = "critical" | "normal" | "sheddable";

interface Waiter {
  start: () => void;
  timer: NodeJS.Timeout;
}

export interface InFlightStats {
  /** Operations in flight now. */
  inFlight: number;
  /** Operations waiting for a slot now. */
  waiting: number;
  /** Operations that waited for a slot (since start). */
  queued: number;
  /** Queued operations refused after `maxWaitMs`. */
  timedOut: number;
  /** Sheddable operations refused because no slot was free. */
  shed: number;
}

export class InFlight {
  #limit: number;
  readonly #maxWaitMs: number;
  readonly #what: string;
  readonly #critical: Waiter[] = [];
  readonly #normal: Waiter[] = [];
  readonly #stats: InFlightStats = { inFlight: 0, waiting: 0, queued: 0, timedOut: 0, shed: 0 };

  constructor(o: { limit: number; maxWaitMs: number; what: string }) {
    this.#limit = InFlight.#valid(o.limit);
    this.#maxWaitMs = o.maxWaitMs;
    this.#what = o.what;
  }

  static #valid(limit: number): number {
    if (!(limit >= 1)) throw new RangeError(`in-flight limit must be at least 1, not ${limit}`);
    return limit;
  }

  get limit(): number {
    return this.#limit;
  }

  /** Changes the bound (the pool grew or shrank): waiters take the slots a larger bound frees; a smaller one lets operations in flight finish. */
  resize(limit: number): void {
    this.#limit = InFlight.#valid(limit);
    this.#admit();
  }

  get stats(): Readonly<InFlightStats> {
    return { ...this.#stats, waiting: this.#critical.length + this.#normal.length };
  }

  /** Runs `fn` once a slot is free (at once when one is); refused as the lane says when none frees up. */
  async run<T>(lane: Lane, fn: () => Promise<T>): Promise<T> {
    if (this.#stats.inFlight >= this.#limit || this.#critical.length + this.#normal.length > 0) {
      if (lane === "sheddable") {
        this.#stats.shed++;
        throw new IddError("UNAVAILABLE", `${this.#what} busy (${this.#stats.inFlight} operations in flight): sample append shed`);
      }
      await this.#wait(lane === "critical" ? this.#critical : this.#normal);
    } else {
      this.#stats.inFlight++;
    }
    try {
      return await fn();
    } finally {
      this.#release();
    }
  }

  /** Resolves holding a slot (given by #admit), or rejects after `maxWaitMs`. */
  #wait(queue: Waiter[]): Promise<void> {
    this.#stats.queued++;
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        start: () => {
          clearTimeout(waiter.timer);
          resolve();
        },
        timer: setTimeout(() => {
          queue.splice(queue.indexOf(waiter), 1);
          this.#stats.timedOut++;
          const message = `${this.#what} busy: no slot free within ${this.#maxWaitMs} ms (${this.#stats.inFlight} operations in flight, ${this.#critical.length + this.#normal.length} waiting)`;
          reject(new IddError("UNAVAILABLE", message));
        }, this.#maxWaitMs),
      };
      queue.push(waiter);
    });
  }

  /** A slot freed: waiters, critical first, take the free slots. */
  #release(): void {
    this.#stats.inFlight--;
    this.#admit();
  }

  #admit(): void {
    while (this.#stats.inFlight < this.#limit) {
      const next = this.#critical.shift() ?? this.#normal.shift();
      if (!next) return;
      this.#stats.inFlight++;
      next.start();
    }
  }
}
