/**
 * MongoDB's time, known to a worker without a round trip per use: one reading of the server's wall
 * clock (`hello`'s `localTime`, `Connection.serverTime`) carried forward on this worker's monotonic
 * clock, read again every REFRESH_MS in the background (the caller is answered from the reading it
 * has meanwhile). The worker's wall clock plays no part, so a host clock that is wrong from the start
 * or stepped while the worker runs moves nothing: what is written on MongoDB's time (a gapless
 * number's `expiresAt`) is judged by the sweep on MongoDB's time too.
 *
 * The reading is dated to when its request was sent, not when its answer came: MongoDB read its
 * clock somewhere in between, so the estimate is never behind MongoDB's time (a lease computed from
 * it never ends early) and at most one round trip ahead. Only the monotonic clock's drift between
 * readings (NTP slews at most 500 ppm: 30 ms a minute) can put it behind.
 */

/** How often MongoDB's clock is read again (in the background). */
export const REFRESH_MS = 60_000;
/** After a failed reading, the next try waits this long (the estimate carries on meanwhile). */
const RETRY_MS = 1000;

export interface ServerClockOptions {
  /** Monotonic ms (`performance.now()` by default). */
  monotonic?: () => number;
  refreshMs?: number;
}

export class ServerClock {
  readonly #read: () => Promise<number>;
  readonly #monotonic: () => number;
  readonly #refreshMs: number;
  /** The server's time at `sentAt` (monotonic), at the latest. */
  #reading: { at: number; sentAt: number } | undefined;
  #reads: Promise<void> | undefined;
  /** When the next background reading is due (monotonic). */
  #dueAt = 0;

  /** `read`: the server's wall clock, one round trip (ms since the epoch, whole ms, as `localTime` has). */
  constructor(read: () => Promise<number>, o: ServerClockOptions = {}) {
    this.#read = read;
    this.#monotonic = o.monotonic ?? (() => performance.now());
    this.#refreshMs = o.refreshMs ?? REFRESH_MS;
  }

  /** MongoDB's time now (ms since the epoch): a round trip only for the first reading, which a failure of throws. */
  async now(): Promise<number> {
    if (!this.#reading) await this.#readOnce();
    else if (this.#monotonic() >= this.#dueAt) void this.#readOnce().catch(() => {});
    const r = this.#reading as { at: number; sentAt: number };
    // + 1: localTime is truncated to the ms.
    return Math.ceil(r.at + 1 + (this.#monotonic() - r.sentAt));
  }

  /** One reading at a time. */
  #readOnce(): Promise<void> {
    this.#reads ??= (async () => {
      const sentAt = this.#monotonic();
      this.#dueAt = sentAt + RETRY_MS;
      try {
        const at = await this.#read();
        this.#reading = { at, sentAt };
        this.#dueAt = sentAt + this.#refreshMs;
      } finally {
        this.#reads = undefined;
      }
    })();
    return this.#reads;
  }
}
