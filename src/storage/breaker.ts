/**
 * Fails MongoDB calls fast while MongoDB is known to be unreachable. Without it, every call during
 * an outage waits the driver's whole server-selection timeout (5 s), and a batch of requests that
 * each touch MongoDB outlives the consumer session (G3: answer with UNAVAILABLE, don't stall).
 *
 * A connection failure opens the breaker; calls then throw UNAVAILABLE at once. After `retryMs` one
 * call goes through as a probe (the others still fail fast); its success closes the breaker.
 */
import { MongoNetworkError, MongoServerSelectionError } from "mongodb";
import { IddError } from "../errors.js";

export function isConnectionFailure(e: unknown): boolean {
  return e instanceof MongoServerSelectionError || e instanceof MongoNetworkError;
}

export class Breaker {
  readonly #retryMs: number;
  readonly #clock: () => number;
  #downSince: number | undefined;
  #retryAt = 0;
  #probing = false;

  constructor(opts: { retryMs: number; clock?: () => number }) {
    this.#retryMs = opts.retryMs;
    this.#clock = opts.clock ?? Date.now;
  }

  get open(): boolean {
    return this.#downSince !== undefined;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    const now = this.#clock();
    const probe = this.#downSince !== undefined;
    if (probe && (this.#probing || now < this.#retryAt)) {
      throw new IddError("UNAVAILABLE", `MongoDB unreachable for ${now - (this.#downSince as number)} ms; retrying`, {
        retriable: true,
      });
    }
    if (probe) this.#probing = true;
    try {
      const r = await fn();
      this.#downSince = undefined;
      return r;
    } catch (e) {
      if (isConnectionFailure(e)) {
        this.#downSince ??= now;
        this.#retryAt = this.#clock() + this.#retryMs;
        throw new IddError("UNAVAILABLE", `MongoDB unreachable: ${(e as Error).message}`, { cause: e, retriable: true });
      }
      throw e;
    } finally {
      if (probe) this.#probing = false;
    }
  }
}
