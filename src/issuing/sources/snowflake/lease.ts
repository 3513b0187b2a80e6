/**
 * A worker id of one snowflake sequence, leased from Redis (lua/acquireLease-2.lua, renewLease-2.lua, releaseLease-2.lua).
 *
 * Safety: this holder never issues with a lease it may no longer hold. Its local validity is taken
 * from a monotonic clock read BEFORE each acquire or renew is sent: validUntil = sentAt + TTL − margin.
 * Redis starts the key's TTL when the script runs, which is later, so while validUntil is ahead no
 * one else can hold the id (the margin absorbs clock-rate differences between this host and Redis).
 * A process stopped (SIGSTOP, a long GC) past validUntil wakes with the lease lapsed and issues
 * nothing (LEASE_LOST) until a renewal, sent after waking, proves it still holds the id, or it
 * acquires one again. A renewal that finds another token, or no key, loses the lease for good.
 *
 * Time bound: every acquire and renewal stores the holder's issued-until bound, its wall clock at
 * sending + TTL; the generator never issues a time past the bound it knows stored. A later holder of
 * the id reads the bound (`floorMs`) and issues only later times, also after a restart whose clock
 * went back.
 *
 * Clock: Redis's (`TIME`), read at each acquire and renewal and carried forward by this host's
 * monotonic clock, so every holder of every id issues on one clock, and a step of this host's wall
 * clock (NTP correcting it, an operator) moves no id. On the host's clock, a step an hour ahead had
 * the worker issue ids an hour ahead, recorded as the sequence's high mark: every later issuer, this
 * one once its clock was right again included, answered CLOCK_BACKWARDS for that hour (issue #28).
 */
import { randomBytes, randomInt } from "node:crypto";
import { performance } from "node:perf_hooks";
import { IddError, isIddError } from "../../../core/errors.js";
import type { RedisClient } from "../../../redis/client-type.js";
import type { AcquireLeaseInput } from "../../../redis/script-args.js";
import { Scripts } from "../../../redis/scripts.js";

export interface LeaseSettings {
  /** How long Redis keeps a lease without renewal, ms. */
  ttlMs: number;
  /** How often the holder renews, ms (less than ttlMs − marginMs). */
  renewEveryMs: number;
  /** How much earlier than the TTL the holder stops issuing, ms. */
  marginMs: number;
}

export const LEASE_DEFAULTS: Readonly<LeaseSettings> = Object.freeze({ ttlMs: 10_000, renewEveryMs: 3_000, marginMs: 1_000 });

/** What the generator needs of a lease (a fake one in unit tests). */
export interface IssuingLease {
  /** Wall clock, Unix ms: the bounds are on it, so the generator reads the same. */
  readonly clock: () => number;
  /** The grant in force; throws LEASE_LOST unless held and locally valid right now. */
  current(): LeaseGrant;
  /** Renews now (the issued-until bound moves to now + TTL); throws LEASE_LOST when lost. */
  renew(): Promise<void>;
  /** Gives the id back; `lastIssuedMs` (the latest time issued at) lowers its bound for the next holder. */
  release(lastIssuedMs?: number | null): Promise<void>;
}

export interface LeaseGrant {
  readonly workerId: number;
  /** Counts acquires: a new one means a new holding (maybe another id), so the generator starts over from `floorMs`. */
  readonly generation: number;
  /** The id's issued-until bound left by its earlier holders, Unix ms: issue only later times. Null: never leased. */
  readonly floorMs: number | null;
  /** floorMs is the hold-off after the sequence's snowflake state was new, lost or of another Redis node, not a holder's bound. */
  readonly heldOff: boolean;
  /** The latest time this holder may issue at, Unix ms: stored in Redis before it is used here. */
  readonly untilMs: number;
  /** Monotonic ms: nothing is issued at or after it unless a renewal moves it. */
  readonly validUntil: number;
}

export type LeaseEvent =
  | { type: "acquired"; workerId: number; floorMs: number | null }
  | { type: "renewed"; workerId: number }
  | { type: "renewFailed"; workerId: number; error: unknown }
  | { type: "lost"; workerId: number; reason: string }
  | { type: "released"; workerId: number };

export interface LeaseOptions extends Partial<LeaseSettings> {
  /** The connection the lease scripts run on (Scripts registers them). */
  redis: RedisClient;
  sequence: string;
  workerBits: number;
  /** Wall clock, Unix ms (default Redis's, carried forward by the monotonic clock: see above). */
  clock?: () => number;
  /** Monotonic clock, ms (default performance.now). */
  monotonic?: () => number;
  /**
   * How each acquire and renewal runs (default: as it is): the issuer's Redis breaker, so that while
   * Redis is known unreachable they fail at once (UNAVAILABLE) instead of each waiting the command
   * timeout with the partition's requests behind it (design §5.5).
   */
  guard?: <T>(call: () => Promise<T>) => Promise<T>;
  /** Renew on a timer every renewEveryMs (default true; tests renew by hand to play a stopped process). */
  autoRenew?: boolean;
  /** An acquire takes at once a free id whose earlier bound is at most this far ahead of the clock (default 10 ms). */
  acceptAheadMs?: number;
  /** The id an acquire tries first (default random). */
  preferWorkerId?: number;
  /**
   * Asked when the sequence's snowflake state is missing in Redis: true when MongoDB now records this
   * caller's first lease of the sequence (brand new: no hold-off), false when it was leased before
   * (the state was lost: hold off). Throws when it cannot tell. Without it, a missing state is lost.
   */
  firstLease?: (sequence: string) => Promise<boolean>;
  onEvent?: (e: LeaseEvent) => void;
}

interface Holding {
  workerId: number;
  token: string;
  generation: number;
  floorMs: number | null;
  heldOff: boolean;
  untilMs: number;
  validUntil: number;
}

export function leaseSettings(o: Partial<LeaseSettings>): LeaseSettings {
  const s = { ...LEASE_DEFAULTS, ...o };
  const problems: string[] = [];
  for (const k of ["ttlMs", "renewEveryMs", "marginMs"] as const)
    if (!Number.isInteger(s[k]) || s[k] < (k === "marginMs" ? 0 : 1)) problems.push(`${k} must be a positive integer, got ${s[k]}`);
  if (problems.length === 0 && s.renewEveryMs >= s.ttlMs - s.marginMs)
    problems.push(
      `renewEveryMs (${s.renewEveryMs}) must be less than ttlMs − marginMs (${s.ttlMs - s.marginMs}), or the lease lapses between renewals`,
    );
  if (problems.length > 0) throw new IddError("CONFIG_INVALID", `snowflake lease:\n${problems.join("\n")}`);
  return Object.freeze(s);
}

export class WorkerLease implements IssuingLease {
  readonly settings: LeaseSettings;
  readonly clock: () => number;
  readonly #o: LeaseOptions;
  readonly #scripts: Scripts;
  readonly #mono: () => number;
  #holding: Holding | undefined;
  #generation = 0;
  /** Why there is no lease, for LEASE_LOST messages. */
  #gone = "no worker id acquired yet";
  #timer: NodeJS.Timeout | undefined;
  #renewing: Promise<void> | undefined;
  #acquiring: Promise<LeaseGrant> | undefined;
  /** Redis's clock (Unix ms) at the latest acquire or renewal, and the monotonic reading it goes with. */
  #redisClock: { ms: number; mono: number } | undefined;

  constructor(options: LeaseOptions) {
    this.#o = options;
    this.#scripts = new Scripts(options.redis);
    this.settings = leaseSettings(options);
    this.clock = options.clock ?? (() => this.#carriedRedisClock());
    this.#mono = options.monotonic ?? (() => performance.now());
  }

  #guarded<T>(call: () => Promise<T>): Promise<T> {
    return this.#o.guard ? this.#o.guard(call) : call();
  }

  /** Redis's clock carried forward by the monotonic one; the host's wall clock before the first reading. */
  #carriedRedisClock(): number {
    const r = this.#redisClock;
    return r ? r.ms + (this.#mono() - r.mono) : Date.now();
  }

  /**
   * Reads Redis's clock (default clock only), taken to be when its answer arrived (so the carried
   * clock may lag Redis's by the round trip, never lead it); returns the monotonic reading of then.
   */
  async #readRedisClock(): Promise<number> {
    if (this.#o.clock) return this.#mono();
    const [s, us] = await this.#o.redis.time();
    const mono = this.#mono();
    this.#redisClock = { ms: Number(s) * 1000 + Math.floor(Number(us) / 1000), mono };
    return mono;
  }

  get workerId(): number | undefined {
    return this.#holding?.workerId;
  }

  current(): LeaseGrant {
    const h = this.#holding;
    if (!h) throw new IddError("LEASE_LOST", `snowflake ${this.#o.sequence}: ${this.#gone}`);
    const late = this.#mono() - h.validUntil;
    if (late >= 0)
      throw new IddError(
        "LEASE_LOST",
        `snowflake ${this.#o.sequence}: the lease of worker id ${h.workerId} lapsed ${Math.round(late)} ms ago (no renewal answered in time)`,
      );
    return h;
  }

  /**
   * Holds a worker id: the one held if a renewal shows it still is, else a free one (possibly
   * another). Starts the renewal timer. Throws WORKER_IDS_EXHAUSTED when every id is leased. The
   * grant comes back even when its answer came too late to be valid (current() then says so).
   */
  acquire(): Promise<LeaseGrant> {
    // Two acquires at once would lease two ids and leak one until its TTL: the second joins the first.
    this.#acquiring ??= this.#guarded(() => this.#acquireOnce()).finally(() => {
      this.#acquiring = undefined;
    });
    return this.#acquiring;
  }

  async #acquireOnce(): Promise<LeaseGrant> {
    if (this.#holding) {
      try {
        await this.#renew(false);
        if (this.#holding) return this.#holding;
      } catch (e) {
        if (!isIddError(e, "LEASE_LOST")) throw e;
      }
    }
    const { ttlMs, marginMs } = this.settings;
    const token = randomBytes(16).toString("hex");
    const ids = 2 ** this.#o.workerBits;
    const firstId = this.#o.preferWorkerId ?? randomInt(ids);
    const send = async (missing: AcquireLeaseInput["missing"]) => {
      const sentAt = await this.#readRedisClock();
      const wall = this.clock();
      const answer = await this.#scripts.acquireLease({
        ...{ sequence: this.#o.sequence, token, ttlMs, ids, firstId, missing },
        ...{ untilMs: wall + ttlMs, acceptMs: wall + (this.#o.acceptAheadMs ?? 10) },
      });
      return { answer, sentAt, wall };
    };
    const firstLease = this.#o.firstLease;
    let { answer, sentAt, wall } = await send(firstLease ? "ask" : "lost");
    if (answer.missing && firstLease) {
      // New or lost? MongoDB knows (design §5.6). "New" counts only within half the margin of the
      // Redis time read before MongoDB was written: a lease another worker took meanwhile, lost
      // with Redis before its holder could issue, is then past it, and this acquire holds off.
      const at = answer.missing;
      const isNew = await firstLease(this.#o.sequence);
      ({ answer, sentAt, wall } = await send(isNew ? { node: at.node, untilRedisMs: at.redisMs + Math.floor(marginMs / 2) } : "lost"));
    }
    if (answer.missing) throw new IddError("INTERNAL", `acquireLease of ${this.#o.sequence} answered "missing" unasked`);
    const got = answer;
    const generation = ++this.#generation;
    this.#holding = {
      ...{ workerId: got.workerId, floorMs: got.floorMs, heldOff: got.heldOff },
      ...{ token, generation, untilMs: wall + ttlMs, validUntil: sentAt + ttlMs - marginMs },
    };
    this.#o.onEvent?.({ type: "acquired", workerId: got.workerId, floorMs: got.floorMs });
    this.#schedule(this.settings.renewEveryMs);
    return this.#holding;
  }

  /** Renews now (one renewal at a time: a call while one is out waits for that one). */
  renew(): Promise<void> {
    return this.#renew(true);
  }

  /** `guarded` false: within an acquire, already under the guard (a probe must not refuse its own renewal). */
  #renew(guarded: boolean): Promise<void> {
    this.#renewing ??= (guarded ? this.#guarded(() => this.#renewOnce()) : this.#renewOnce()).finally(() => {
      this.#renewing = undefined;
    });
    return this.#renewing;
  }

  async #renewOnce(): Promise<void> {
    const h = this.#holding;
    if (!h) throw new IddError("LEASE_LOST", `snowflake ${this.#o.sequence}: ${this.#gone}`);
    const { ttlMs, marginMs } = this.settings;
    const sentAt = await this.#readRedisClock();
    const untilMs = this.clock() + ttlMs;
    try {
      await this.#scripts.renewLease({ sequence: this.#o.sequence, workerId: h.workerId, token: h.token, ttlMs, untilMs });
    } catch (e) {
      if (isIddError(e, "LEASE_LOST") && this.#holding === h) this.#lose(`worker id ${h.workerId} was taken over or expired in Redis`);
      throw e;
    }
    if (this.#holding !== h) return; // released or re-acquired meanwhile
    h.validUntil = Math.max(h.validUntil, sentAt + ttlMs - marginMs);
    h.untilMs = Math.max(h.untilMs, untilMs);
    this.#o.onEvent?.({ type: "renewed", workerId: h.workerId });
  }

  /**
   * Gives the id back at once (a clean shutdown) and stops renewing. `lastIssuedMs`, the latest
   * time issued at with this lease, lowers the id's bound so the next holder need not wait for the
   * one announced (never below the bound found at acquire); without it the bound stays.
   */
  async release(lastIssuedMs?: number | null): Promise<void> {
    const h = this.#holding;
    this.#stop("released");
    if (!h) return;
    const finalMs = lastIssuedMs === undefined ? null : Math.max(lastIssuedMs ?? 0, h.floorMs ?? 0);
    await this.#scripts.releaseLease({ sequence: this.#o.sequence, workerId: h.workerId, token: h.token, finalMs });
    this.#o.onEvent?.({ type: "released", workerId: h.workerId });
  }

  /** Stops renewing and forgets the lease without telling Redis (it expires after its TTL). */
  abandon(): void {
    this.#stop("abandoned");
  }

  #lose(reason: string): void {
    const h = this.#holding;
    this.#stop(`lost: ${reason}`);
    if (h) this.#o.onEvent?.({ type: "lost", workerId: h.workerId, reason });
  }

  #stop(why: string): void {
    this.#holding = undefined;
    this.#gone = why;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(ms: number): void {
    clearTimeout(this.#timer);
    if (this.#o.autoRenew === false) return;
    this.#timer = setTimeout(() => {
      const h = this.#holding;
      if (!h) return;
      this.renew().then(
        () => this.#schedule(this.settings.renewEveryMs),
        (error) => {
          if (this.#holding !== h) return; // lost for good: no more renewals
          this.#o.onEvent?.({ type: "renewFailed", workerId: h.workerId, error });
          this.#schedule(Math.max(1, Math.floor(this.settings.renewEveryMs / 3)));
        },
      );
    }, ms);
    this.#timer.unref();
  }
}
