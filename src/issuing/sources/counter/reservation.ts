/**
 * One counter's reservation (I1): the epoch its claims are made under, and Redis's max, raised in
 * MongoDB first, then in Redis, ahead of need, so that a few minutes of consumption always fit in
 * the headroom. MongoDB's `Store.reserve` appends, then reads the reservation in force: an epoch
 * newer than this counter's means a restore on another Redis superseded it (a split brain, §5.16),
 * and the raise is void (`stale`).
 */
import { IddError, isIddError } from "../../../core/errors.js";
import type { Instrumentation } from "../../../core/events.js";
import type { RedisClient } from "../../../redis/client-type.js";
import type { Refused } from "../../../redis/script-errors.js";
import type { Scripts } from "../../../redis/scripts.js";
import type { SequenceDef } from "../../../sequences/definition.js";
import type { Store } from "../../../storage/store.js";

export interface ReservationConfig {
  /** Raise the reservation when the headroom covers less than this much consumption… */
  reserveLowMs: number;
  /** …to cover this much. */
  reserveAheadMs: number;
  /** Never reserve fewer numbers than this at once. */
  minReservation: number;
}

export interface ReservationDeps {
  redis: RedisClient;
  scripts: Scripts;
  store: Store;
  worker: string;
  config: ReservationConfig;
  /** Redis round trips, for tests and metrics. */
  stats: { redisCalls: number };
  events?: Instrumentation;
}

/** What the counter's use says about its need: the last number claimed, its rate, its block size. */
export interface Use {
  lastClaimed: bigint;
  perSecond: number;
  blockSize: number;
}

/** A raise that did not happen: the raise script's refusal, or `stale` (a newer epoch in MongoDB). */
export type RaiseRefused = Refused<"missing" | "suspect" | "fenced" | "stale">;

const INITIAL_EPOCH = 1;

export class Reservation {
  /** The epoch claims are made under; undefined: read from MongoDB at the next claim. */
  epoch: number | undefined;
  /** Redis's max as last seen. */
  max = -1n;
  readonly #def: SequenceDef;
  readonly #period: string | null;
  readonly #key: string;
  readonly #d: ReservationDeps;
  readonly #use: () => Use;
  #raising: Promise<RaiseRefused | undefined> | undefined;

  constructor(def: SequenceDef, period: string | null, key: string, d: ReservationDeps, use: () => Use) {
    this.#def = def;
    this.#period = period;
    this.#key = key;
    this.#d = d;
    this.#use = use;
  }

  /** The raise in flight, if any. */
  get raising(): Promise<RaiseRefused | undefined> | undefined {
    return this.#raising;
  }

  /** The epoch known, or read from MongoDB. */
  async current(): Promise<number> {
    return this.epoch ?? (await this.#load());
  }

  /** Forgets the epoch known and returns the counter's epoch in Redis when it is a number below MongoDB's epoch in force (not a restore's fence token). */
  async staleEpoch(): Promise<number | undefined> {
    this.epoch = undefined;
    this.#d.stats.redisCalls++;
    const held = await this.#d.redis.hget(this.#key, "epoch");
    if (held === null || !/^\d+$/.test(held)) return undefined;
    const inForce = await this.#d.store.getReservation(this.#def.name, this.#period);
    return inForce && inForce.epoch > Number(held) ? Number(held) : undefined;
  }

  /**
   * Reads the fence epoch from MongoDB. A counter never reserved before is created here: its first
   * reservation is recorded in MongoDB, then the Redis counter is created if absent (I1), under this
   * node's identity. A counter MongoDB knows but Redis lacks is restored at the claim (-1).
   */
  async #load(): Promise<number> {
    const def = this.#def;
    const existing = await this.#d.store.getReservation(def.name, this.#period);
    if (existing) {
      this.epoch = existing.epoch;
      return existing.epoch;
    }
    const max = this.#capped(def.start - 1n + BigInt(this.#size()));
    await this.#d.store.appendReservation({ sequence: def.name, period: this.#period, max, epoch: INITIAL_EPOCH, worker: this.#d.worker });
    try {
      this.#d.stats.redisCalls++;
      await this.#d.scripts.initCounter({
        sequence: def.name,
        period: this.#period,
        cur: def.start - 1n,
        max,
        epoch: String(INITIAL_EPOCH),
      });
    } catch (e) {
      if (!isIddError(e, "REDIS_COUNTER_EXISTS")) throw e; // created meanwhile by another worker
    }
    this.epoch = INITIAL_EPOCH;
    return INITIAL_EPOCH;
  }

  #size(): number {
    const { reserveAheadMs, minReservation } = this.#d.config;
    const u = this.#use();
    return Math.max(minReservation, Math.ceil((u.perSecond * reserveAheadMs) / 1000), 4 * u.blockSize);
  }

  #capped(n: bigint): bigint {
    return n > this.#def.maxValue ? this.#def.maxValue : n;
  }

  /** Whether the headroom above the last claim covers less than IDD_RESERVE_LOW_MS of consumption (or two blocks). */
  low(): boolean {
    const u = this.#use();
    const headroom = Number(this.max - u.lastClaimed);
    const low = Math.max((u.perSecond * this.#d.config.reserveLowMs) / 1000, 2 * u.blockSize);
    return headroom < low && this.max < this.#def.maxValue;
  }

  /**
   * Raises the reservation in MongoDB, then Redis's max to it (I1). Serialized per counter.
   * Undefined when raised; `stale` when a restore under a newer epoch superseded this worker's, or
   * what the raise script refused. Throws SEQUENCE_EXHAUSTED at the sequence's maxValue.
   */
  raise(): Promise<RaiseRefused | undefined> {
    this.#raising ??= (async (): Promise<RaiseRefused | undefined> => {
      const def = this.#def;
      const epoch = await this.current();
      // MongoDB's reservation is the authority and may be ahead of what this worker has seen.
      let from = (await this.#d.store.getReservation(def.name, this.#period))?.max ?? -1n;
      for (let round = 0; round < 3; round++) {
        if (this.max > from) from = this.max;
        const { lastClaimed } = this.#use();
        if (lastClaimed > from) from = lastClaimed;
        const target = this.#capped(from + BigInt(this.#size()));
        if (target <= from) {
          const which = this.#period === null ? "" : ` in period ${this.#period}`;
          throw new IddError("SEQUENCE_EXHAUSTED", `sequence "${def.name}" reached its maxValue ${def.maxValue}${which}`);
        }
        const inForce = await this.#d.store.reserve({
          sequence: def.name,
          period: this.#period,
          max: target,
          epoch,
          worker: this.#d.worker,
        });
        if (inForce.epoch > epoch) {
          // A restore under a newer epoch superseded this worker's (on another Redis, in a split
          // brain): the reservation just appended is void, and Redis's max stays where it was.
          this.epoch = undefined;
          const why = `${this.#key}: epoch ${epoch} was superseded by ${inForce.epoch}; raise to ${target} not used`;
          return { refused: "stale", error: new IddError("REDIS_FENCED", why) };
        }
        this.#d.stats.redisCalls++;
        const raised = await this.#d.scripts.raise({ sequence: def.name, period: this.#period, max: target, epoch: String(epoch) });
        if ("refused" in raised) return raised;
        this.max = raised.max;
        this.#d.events?.emit("allocation.raised", { sequence: def.name, period: this.#period, max: target });
        // Redis above the target: this worker read MongoDB before another raise (or replay) was
        // visible. Redis's max is itself recorded (I1), so raise again from there.
        if (this.max <= target) return undefined;
      }
      return undefined;
    })().finally(() => {
      this.#raising = undefined;
    });
    return this.#raising;
  }
}
