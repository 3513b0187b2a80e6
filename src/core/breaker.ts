/**
 * Fails calls to a service fast while it is known to be unreachable. Without it, every call during
 * an outage waits a whole timeout (MongoDB's server selection: 5 s; a hung Redis: the command
 * timeout), and batches of requests crawl or outlive the consumer session (G3: answer, don't stall).
 *
 * A failure (`isFailure`) opens the breaker; calls then throw UNAVAILABLE at once. After `retryMs`
 * one call goes through as a probe (the others still fail fast); its success closes the breaker.
 * A probe that has not settled after `probeTimeoutMs` (a half-open connection) no longer holds
 * the others back: the next call after `retryMs` probes again. Other errors pass through untouched.
 *
 * With `stallMs`, a failure that took longer than that is not the service's: the command timed out
 * because this process was stopped (SIGSTOP, a VM or GC pause) and its timer fired on waking. It is
 * thrown as UNAVAILABLE marked `stalled(e)` and leaves the breaker closed: the caller must not act as
 * if the service were down (a worker stopped long enough may have lost its partition; see
 * src/issuing/redis-guard.ts).
 */
import { performance } from "node:perf_hooks";
import { IddError } from "./errors.js";

const stalls = new WeakSet<object>();

/** The failure came from this process being stalled, not from the service. */
export const stalled = (e: unknown): boolean => typeof e === "object" && e !== null && stalls.has(e);

export class Breaker {
  readonly #retryMs: number;
  readonly #clock: () => number;
  readonly #what: string;
  readonly #isFailure: (e: unknown) => boolean;
  #downSince: number | undefined;
  #retryAt = 0;
  /** When the probe in flight started (undefined: none in flight). */
  #probeSince: number | undefined;
  readonly #probeTimeoutMs: number;
  readonly #stallMs: number | undefined;
  readonly #onChange: ((open: boolean) => void) | undefined;

  constructor(opts: {
    what: string;
    retryMs: number;
    isFailure: (e: unknown) => boolean;
    /** Monotonic ms (default performance.now): the breaker measures durations, which a wall clock step must not move. */
    clock?: () => number;
    probeTimeoutMs?: number;
    stallMs?: number;
    /** Told when the breaker opens (true) or closes (false). */
    onChange?: (open: boolean) => void;
  }) {
    this.#what = opts.what;
    this.#retryMs = opts.retryMs;
    this.#probeTimeoutMs = opts.probeTimeoutMs ?? 10_000;
    this.#isFailure = opts.isFailure;
    this.#clock = opts.clock ?? (() => performance.now());
    this.#stallMs = opts.stallMs;
    this.#onChange = opts.onChange;
  }

  get open(): boolean {
    return this.#downSince !== undefined;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    const now = this.#clock();
    const probe = this.#downSince !== undefined;
    const probing = this.#probeSince !== undefined && now - this.#probeSince < this.#probeTimeoutMs;
    if (probe && (probing || now < this.#retryAt)) {
      throw new IddError("UNAVAILABLE", `${this.#what} unreachable for ${Math.round(now - (this.#downSince as number))} ms; retrying`);
    }
    if (probe) this.#probeSince = now;
    try {
      const r = await fn();
      if (this.#downSince !== undefined) {
        this.#downSince = undefined;
        this.#onChange?.(false);
      }
      return r;
    } catch (e) {
      if (this.#isFailure(e)) {
        const took = this.#clock() - now;
        if (this.#stallMs !== undefined && took > this.#stallMs) {
          const message = `${this.#what} did not answer in ${took} ms while this process was stalled: not counted as ${this.#what} down`;
          const err = new IddError("UNAVAILABLE", message, { cause: e });
          stalls.add(err);
          throw err;
        }
        if (this.#downSince === undefined) {
          this.#downSince = now;
          this.#onChange?.(true);
        }
        this.#retryAt = this.#clock() + this.#retryMs;
        throw new IddError("UNAVAILABLE", `${this.#what} unreachable: ${(e as Error).message}`, { cause: e });
      }
      throw e;
    } finally {
      if (probe && this.#probeSince === now) this.#probeSince = undefined;
    }
  }
}
