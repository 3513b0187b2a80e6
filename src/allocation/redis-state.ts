/**
 * Whether this worker may trust Redis's counters. A marker key (`idd:marker`) is written once when
 * idd first uses an empty Redis with an empty MongoDB, and again by `idd replay`; every claim script
 * checks it. A Redis that restarted empty or was flushed lacks it, so claims fail closed with
 * REDIS_STATE_LOST until replay has rebuilt the counters (docs/design.md §5.6) — detected, not assumed.
 */
import type { Redis } from "ioredis";
import { IddError } from "../core/errors.js";
import { readMarker, writeMarker } from "../redis/marker.js";
import type { Store } from "../storage/store.js";

export class RedisState {
  readonly #redis: Redis;
  readonly #store: Store;
  #marker: string | undefined;
  #reading: Promise<string> | undefined;

  constructor(redis: Redis, store: Store) {
    this.#redis = redis;
    this.#store = store;
  }

  /** The marker claims must present; read once and then kept until a script rejects it. */
  marker(): Promise<string> {
    return this.#marker !== undefined ? Promise.resolve(this.#marker) : this.refresh();
  }

  /**
   * Reads the marker again (after a script answered REDIS_STATE_LOST). When Redis has none: a
   * brand-new installation (MongoDB has no reservation at all) gets one; otherwise Redis lost its
   * state and this throws REDIS_STATE_LOST until replay writes a new marker.
   */
  refresh(): Promise<string> {
    this.#marker = undefined;
    this.#reading ??= this.#read().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  async #read(): Promise<string> {
    let m = await readMarker(this.#redis);
    if (m === null && !(await this.#store.hasReservations())) {
      // With only snowflake sequences MongoDB never holds a reservation, so a Redis that lost its data
      // looks new too: the time writeMarker writes makes new lease holders wait out the leases that vanished.
      await writeMarker(this.#redis, "new");
      m = await readMarker(this.#redis);
    }
    if (m === null) {
      throw new IddError(
        "REDIS_STATE_LOST",
        "Redis has no idd marker but MongoDB holds reservations: Redis lost its state; run `idd replay` to rebuild it",
      );
    }
    this.#marker = m;
    return m;
  }
}
