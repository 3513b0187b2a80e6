/**
 * Snowflake ids of one sequence on one worker, made in memory: no Redis or MongoDB round trip per id.
 *
 * `take` is synchronous and all or nothing: the ranges, or an error. `takeAsync` waits where `take`
 * would throw SNOWFLAKE_WAIT (and may then spread one call over several time units). Rules, checked
 * on every call:
 * - the lease must be held and locally valid (else LEASE_LOST, see lease.ts);
 * - ids strictly increase across calls, also across a new lease (the first unit after a new grant is
 *   past both the grant's floor and the last unit issued);
 * - an id's time is never later than the clock + maxAheadMs, nor than the lease's stored issued-until
 *   bound; a unit whose sequence is used up moves on to the next unit within that limit, else waits;
 * - the clock behind the latest reading this generator saw, or behind the previous holder's bound,
 *   by at most maxBackwardWaitMs: wait it out; by more: CLOCK_BACKWARDS (counted).
 */
import { IddError } from "../../../core/errors.js";
import type { Range } from "../../../core/range.js";
import { fieldMax, runsOutAt, type SnowflakeLayout, unitAt, unitStart } from "../../../sequences/snowflake-layout.js";
import type { IssuingLease, LeaseGrant } from "./lease.js";

export interface GeneratorSettings {
  /** A clock this far behind (ms) is waited out; further behind is refused with CLOCK_BACKWARDS. */
  maxBackwardWaitMs: number;
  /** How far (ms) an id's time may run ahead of the clock when a unit's sequence is used up. */
  maxAheadMs: number;
}

export const GENERATOR_DEFAULTS: Readonly<GeneratorSettings> = Object.freeze({ maxBackwardWaitMs: 10, maxAheadMs: 0 });

export interface GeneratorOptions extends Partial<GeneratorSettings> {
  layout: SnowflakeLayout;
  lease: IssuingLease;
  /** Wall clock, Unix ms; default the lease's (the bounds are on it, so it must be the same clock). */
  clock?: () => number;
  /** How takeAsync waits (tests pass one that moves their clock). */
  sleep?: (ms: number) => Promise<void>;
}

/** Why nothing more can be issued this instant. */
type Wait = { ms: number } | { renew: true };

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class SnowflakeGenerator {
  readonly settings: GeneratorSettings;
  /** Refusals and waits since start: the instrumentation a caller reports. */
  readonly counts = { clockBackwards: 0, leaseLost: 0, waits: 0 };
  /** The most ids one `take` can ever return (a time unit's sequence, times the units ahead allowed). */
  readonly maxTake: number;
  readonly #layout: SnowflakeLayout;
  readonly #lease: IssuingLease;
  readonly #clock: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #perUnit: number;
  readonly #maxUnit: number;
  readonly #timeShift: bigint;
  #generation = -1;
  #workerPart = 0n;
  #floorMs: number | null = null;
  #heldOff = false;
  /** The time unit of the largest id another worker answered (raiseFloor); -1: none. Kept across grants. */
  #aboveUnit = -1;
  /** The next id is at (unit, seq) or later. */
  #nextUnit = 0;
  #nextSeq = 0;
  /** The latest unit issued at, -1 before the first. */
  #lastUnit = -1;
  /** The latest clock reading seen. */
  #highClock = Number.NEGATIVE_INFINITY;

  constructor(o: GeneratorOptions) {
    const s = { ...GENERATOR_DEFAULTS, ...o };
    const problems = (["maxBackwardWaitMs", "maxAheadMs"] as const)
      .filter((k) => !Number.isInteger(s[k]) || s[k] < 0)
      .map((k) => `${k} must be an integer >= 0, got ${s[k]}`);
    if (problems.length > 0) throw new IddError("CONFIG_INVALID", `snowflake generator:\n${problems.join("\n")}`);
    this.settings = Object.freeze({ maxBackwardWaitMs: s.maxBackwardWaitMs, maxAheadMs: s.maxAheadMs });
    this.#layout = o.layout;
    this.#lease = o.lease;
    this.#clock = o.clock ?? o.lease.clock;
    this.#sleep = o.sleep ?? realSleep;
    const max = fieldMax(o.layout);
    this.#perUnit = max.seq + 1;
    this.#maxUnit = max.time;
    this.#timeShift = BigInt(o.layout.workerBits + o.layout.seqBits);
    this.maxTake = this.#perUnit * (Math.floor(s.maxAheadMs / o.layout.unitMs) + 1);
  }

  /** The time (Unix ms) of the latest unit issued at; null before the first id. */
  get lastIssuedMs(): number | null {
    return this.#lastUnit < 0 ? null : unitStart(this.#layout, this.#lastUnit);
  }

  /**
   * `count` ids (1..maxTake) at `nowMs`, synchronously: ranges of consecutive ids, in order. Throws
   * LEASE_LOST, CLOCK_BACKWARDS, SNOWFLAKE_WAIT (retriable: not all of them can be issued this
   * instant; nothing was issued), SEQUENCE_EXHAUSTED (the time field ran out), INVALID_COUNT.
   */
  take(count: number, nowMs: number = this.#clock()): Range[] {
    if (!Number.isInteger(count) || count < 1 || count > this.maxTake)
      throw new IddError("INVALID_COUNT", `take(${count}): one take issues 1..${this.maxTake} ids; takeAsync issues more`);
    const { ranges, wait } = this.#step(count, nowMs, false);
    if (wait) {
      const why = "ms" in wait ? `retry in ${wait.ms} ms` : "the issued-until bound is reached until the lease renews";
      throw new IddError("SNOWFLAKE_WAIT", `snowflake: ${count} ids cannot be issued this instant; ${why}`);
    }
    return ranges;
  }

  /**
   * `count` ids (any positive number), waiting out a used-up time unit, a small backward step of
   * the clock or the issued-until bound (renewing the lease). Throws what `take` throws but
   * SNOWFLAKE_WAIT; ids issued before such an error are dropped (snowflake ids may have gaps).
   */
  async takeAsync(count: number): Promise<Range[]> {
    if (!Number.isSafeInteger(count) || count < 1)
      throw new IddError("INVALID_COUNT", `takeAsync(${count}): count must be a positive integer`);
    const out: Range[] = [];
    let left = count;
    for (;;) {
      const step = this.#step(left, this.#clock(), true);
      for (const r of step.ranges) append(out, r);
      left -= step.issued;
      if (left === 0) return out;
      this.counts.waits++;
      if (step.wait && "ms" in step.wait) await this.#sleep(step.wait.ms);
      else await this.#lease.renew();
    }
  }

  /**
   * From now on, only ids above `id`, an id of this sequence another worker answered (the partition's
   * earlier owner): its time unit becomes a floor like a lease's bound, so a clock behind it is
   * waited out (a little) or refused (CLOCK_BACKWARDS), and it holds across new grants.
   */
  raiseFloor(id: bigint): void {
    const unit = Number(id >> this.#timeShift);
    if (unit <= this.#aboveUnit) return;
    this.#aboveUnit = unit;
    if (this.#nextUnit <= unit) {
      this.#nextUnit = unit + 1;
      this.#nextSeq = 0;
    }
  }

  /** Stops issuing and gives the worker id back, lowering its bound to the latest time issued at. */
  async close(): Promise<void> {
    await this.#lease.release(this.lastIssuedMs);
  }

  #step(count: number, now: number, partial: boolean): { ranges: Range[]; issued: number; wait: Wait | null } {
    let grant: LeaseGrant;
    try {
      grant = this.#lease.current();
    } catch (e) {
      this.counts.leaseLost++;
      throw e;
    }
    if (grant.generation !== this.#generation) this.#adopt(grant);
    this.#checkClock(now);

    const L = this.#layout;
    const perUnit = this.#perUnit;
    let unit = this.#nextUnit;
    let seq = this.#nextSeq;
    const nowUnit = unitAt(L, now);
    if (nowUnit > unit) {
      unit = nowUnit;
      seq = 0;
    }
    const top = Math.min(unitAt(L, now + this.settings.maxAheadMs), unitAt(L, grant.untilMs), this.#maxUnit);
    const capacity = unit > top ? 0 : (top - unit) * perUnit + (perUnit - seq);
    const ranges: Range[] = [];
    let left = capacity >= count || partial ? Math.min(count, capacity) : 0;
    const issued = left;
    while (left > 0) {
      const k = Math.min(left, perUnit - seq);
      const first = (BigInt(unit) << this.#timeShift) | this.#workerPart | BigInt(seq);
      append(ranges, { first, last: k === 1 ? first : first + BigInt(k - 1) });
      this.#lastUnit = unit;
      left -= k;
      seq += k;
      if (seq === perUnit) {
        unit++;
        seq = 0;
      }
    }
    if (issued > 0) {
      this.#nextUnit = unit;
      this.#nextSeq = seq;
    }
    return { ranges, issued, wait: issued === count ? null : this.#waitFor(Math.max(unit, top + 1), now) };
  }

  /** Why unit `unit`, the first one beyond what can be issued at `now`, cannot be issued yet. */
  #waitFor(unit: number, now: number): Wait {
    if (unit > this.#maxUnit)
      throw new IddError("SEQUENCE_EXHAUSTED", `snowflake: the time field ran out at ${runsOutAt(this.#layout).toISOString()}`);
    const ahead = now + this.settings.maxAheadMs;
    if (unit > unitAt(this.#layout, ahead)) return { ms: Math.max(1, Math.ceil(unitStart(this.#layout, unit) - ahead)) };
    return { renew: true }; // the clock allows it, the issued-until bound does not (the clock jumped ahead)
  }

  #checkClock(now: number): void {
    const floor = this.#floorMs ?? Number.NEGATIVE_INFINITY;
    const above = this.#aboveUnit < 0 ? Number.NEGATIVE_INFINITY : unitStart(this.#layout, this.#aboveUnit);
    const seen = Math.max(this.#highClock, above);
    const behind = Math.max(seen - now, floor - now);
    if (behind > this.settings.maxBackwardWaitMs && this.#heldOff && floor >= seen)
      throw new IddError(
        "SNOWFLAKE_HOLD_OFF",
        `snowflake: the sequence's state in Redis was lost or comes from another primary; new worker-id holders wait until ${new Date(floor).toISOString()} (one lease TTL after Redis saw it), so that no holder whose lease vanished can still be issuing; retry then`,
      );
    if (behind > this.settings.maxBackwardWaitMs) {
      this.counts.clockBackwards++;
      const ref =
        floor > seen
          ? "the previous holder's issued-until bound"
          : this.#highClock >= above
            ? "the latest time this worker saw"
            : "the last id the partition's earlier owner answered";
      throw new IddError(
        "CLOCK_BACKWARDS",
        `snowflake: the clock is ${Math.round(behind)} ms behind ${ref} (more than maxBackwardWaitMs ${this.settings.maxBackwardWaitMs}); nothing issued`,
      );
    }
    if (now > this.#highClock) this.#highClock = now;
  }

  /** A new grant (maybe another worker id): start past its floor and past every unit issued so far. */
  #adopt(grant: LeaseGrant): void {
    this.#generation = grant.generation;
    this.#workerPart = BigInt(grant.workerId) << BigInt(this.#layout.seqBits);
    this.#floorMs = grant.floorMs;
    this.#heldOff = grant.heldOff;
    const afterFloor = grant.floorMs === null ? 0 : unitAt(this.#layout, grant.floorMs) + 1;
    this.#nextUnit = Math.max(afterFloor, this.#lastUnit + 1, this.#aboveUnit + 1, 0);
    this.#nextSeq = 0;
  }
}

/** Adds a range, merged with the last one when the ids are consecutive (all between are this worker's). */
function append(out: Range[], r: Range): void {
  const prev = out[out.length - 1];
  if (prev && prev.last + 1n === r.first) out[out.length - 1] = { first: prev.first, last: r.last };
  else out.push(r);
}
