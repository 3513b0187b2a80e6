/**
 * The dispenser's policy for its Redis calls (gens, dedupe lookups, recording, snowflake
 * high marks). While Redis is unreachable a batch is answered from blocks in memory, unrecorded
 * (G3), and for a second no batch waits for Redis again: one call probes it (a Breaker).
 */
import type { Logger } from "pino";
import { Breaker, stalled } from "../core/breaker.js";
import { IddError, isIddError } from "../core/errors.js";
import type { Instrumentation } from "../core/events.js";

export interface RedisGuardOptions {
  /** Redis commands time out after this: a failure that took twice as long is this process stalling. */
  redisTimeoutMs: number;
  /** Monotonic ms for the breaker (default performance.now); never the wall clock, which NTP may step. */
  monotonic?: () => number;
  events?: Instrumentation;
  log: Logger;
}

export class RedisGuard {
  readonly #breaker: Breaker;
  readonly #log: Logger;

  constructor(o: RedisGuardOptions) {
    this.#log = o.log;
    this.#breaker = new Breaker({
      onChange: (open) => o.events?.emit("breaker.state", { what: "redis", open }),
      what: "Redis",
      retryMs: 1000,
      isFailure: (e) => !(e instanceof IddError),
      ...(o.monotonic && { clock: o.monotonic }),
      stallMs: 2 * o.redisTimeoutMs,
    });
  }

  /**
   * A Redis call for `partition`'s batch. Undefined when Redis is unreachable: then the batch is
   * answered from blocks in memory, unrecorded. WORKER_FENCED is thrown, and so is a failure that
   * came from this process being stopped while the call was out: a worker stopped past its session
   * may have lost the partition, and answering unrecorded would publish behind the new owner (G2).
   * The batch fails instead; when it is tried again, Redis is asked again (and fences it, if it lost
   * the partition).
   */
  async call<T>(partition: number, call: () => Promise<T>): Promise<T | undefined> {
    const wasDown = this.#breaker.open;
    try {
      return await this.#breaker.run(call);
    } catch (e) {
      if (!isIddError(e, "UNAVAILABLE") || stalled(e)) throw e;
      if (!wasDown) this.#log.warn({ err: e.message, partition }, "Redis unreachable: answering from blocks in memory, unrecorded");
      return undefined;
    }
  }
}
