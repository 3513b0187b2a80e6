/**
 * One (sequence, period) counter as a worker sees it: unissued blocks held in memory in claim order,
 * handed out front first, so numbers leave strictly increasing. Redis is touched once per block:
 * the next block is claimed while the current one still has numbers (double buffer), sized by the
 * measured rate. The reservation is raised in MongoDB first, then in Redis (I1), ahead of need, so
 * that a few minutes of consumption always fit in the headroom.
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { IddError } from "../../../core/errors.js";
import type { Instrumentation } from "../../../core/events.js";
import type { Range } from "../../../core/range.js";
import type { RedisClient } from "../../../redis/client-type.js";
import { counterKey } from "../../../redis/keys.js";
import type { Scripts } from "../../../redis/scripts.js";
import type { SequenceDef } from "../../../sequences/definition.js";
import type { AppendLog } from "../../../storage/append-log.js";
import type { Grant, GrantOutcome } from "../../../storage/grants.js";
import type { ReleaseWhy } from "../../../storage/releases.js";
import type { Store } from "../../../storage/store.js";
import { SampleWindows } from "../sample-windows.js";
import { abandonedRecords } from "./abandoned-claims.js";
import { BlockSizer, type BlockSizing, Rate } from "./block-sizer.js";
import { Blocks } from "./blocks.js";
import { claimFailure } from "./claim-failure.js";
import { type ClaimRefused, claimLoop } from "./claim-loop.js";
import { type CounterSnapshot, counterSnapshot } from "./counter-snapshot.js";
import { Reservation, type ReservationConfig } from "./reservation.js";
import { restoreOne } from "./restore.js";

export type { CounterSnapshot } from "./counter-snapshot.js";

export interface AllocationConfig extends BlockSizing, ReservationConfig {
  /** Claim the next block when fewer than this fraction of a block is left. */
  prefetchAt: number;
}

export interface CounterDeps {
  /** For the fence check after a strict grant; every script goes through `scripts`. */
  redis: RedisClient;
  scripts: Scripts;
  store: Store;
  /**
   * Whether this worker has claimed a block of `sequence` under `gen` yet (false: it holds none, so
   * its claim may take over a fence Redis may have lost, design I3); `claimed` notes one.
   */
  claimedUnder: { has(sequence: string, gen: number): boolean; note(sequence: string, gen: number): void };
  grants: AppendLog<Grant>;
  /** Numbers this counter gives up without answering them, and why (recorded for audited sequences). */
  release: (c: Counter, ranges: Range[], why: ReleaseWhy) => void;
  worker: string;
  config: AllocationConfig;
  /** The wall clock (Unix ms), for the forecast's dates; rates, block sizing and the unreachable second are monotonic. */
  clock: () => number;
  /** Redis round trips, for tests and metrics. */
  stats: { redisCalls: number };
  events?: Instrumentation;
}

/** Claims this counter remembers having written: Redis returns the three claims before each one. */
const WRITTEN_KEPT = 4;
/** After a claim failed on an unreachable Redis, takes that need a block fail at once for this long. */
const UNREACHABLE_RETRY_MS = 1000;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const mono = () => performance.now(); // durations: a wall clock step must not move them

export class Counter {
  readonly def: SequenceDef;
  readonly period: string | null;
  readonly key: string;
  /** The gen of the sequence's home partition this counter claims under (undefined: none could be taken, Redis was unreachable). */
  readonly gen: number | undefined;
  readonly #d: CounterDeps;
  readonly #blocks = new Blocks();
  readonly #sizer: BlockSizer;
  readonly #rate: Rate;
  readonly #reservation: Reservation;
  #lastClaimed = -1n;
  #claiming: Promise<void> | undefined;
  #blockStartedAt: number;
  #dropped = false;
  /** Why the counter was dropped: a block claimed after that is given up for the same reason. */
  #droppedWhy: ReleaseWhy = "stopped";
  /** The id of a claim Redis did not answer (it may have run) or whose grant is not written yet; sent again by the next claim. */
  #claimId: string | undefined;
  /** The claim ids of the last grants this counter wrote before use (at most WRITTEN_KEPT). */
  readonly #written: string[] = [];
  /**
   * The block whose grant went to the batched log after its write-ahead failed (once per claim: every
   * retry gets the same block), until a retry writes it; released if its claim is not retried.
   */
  #logged: (Range & { claim: string }) | undefined;
  /** Until when takes that need a block fail fast (a store did not answer the last claim). */
  #unreachable: { until: number; failure: IddError } | undefined;
  /** Numbers issued since the last sample. */
  issuedSinceSample = 0;
  /** The last sample windows, for the forecast's rate (closeSample). */
  readonly #windows = new SampleWindows();
  readonly #createdAt: number;

  constructor(def: SequenceDef, period: string | null, gen: number | undefined, deps: CounterDeps) {
    this.def = def;
    this.period = period;
    this.gen = gen;
    this.key = counterKey(def.name, period);
    this.#d = deps;
    this.#sizer = new BlockSizer(deps.config);
    this.#rate = new Rate(mono());
    this.#blockStartedAt = mono();
    this.#createdAt = this.#blockStartedAt;
    const use = () => ({ lastClaimed: this.#lastClaimed, perSecond: this.#rate.perSecond, blockSize: this.#sizer.size });
    this.#reservation = new Reservation(def, period, this.key, deps, use);
  }

  snapshot(): CounterSnapshot {
    return counterSnapshot({
      def: this.def,
      period: this.period,
      available: this.available,
      lastClaimed: this.#lastClaimed,
      max: this.#reservation.max,
      ratePerSecond: this.#rate.perSecond,
      blockSize: this.#sizer.size,
      windowsPerSecond: this.#windows.perSecond,
      now: this.#d.clock(),
    });
  }

  /** Ends a sample window of `ms`: its numbers (the allocator's sample), kept for the forecast's rate over the part of it this counter lived. */
  closeSample(ms: number): number {
    const issued = this.issuedSinceSample;
    this.issuedSinceSample = 0;
    this.#windows.close(Math.min(ms, mono() - this.#createdAt), issued);
    return issued;
  }

  get available(): bigint {
    return this.#blocks.available;
  }

  /** Issues `count` numbers as ranges in increasing order (adjacent ranges merged). */
  async take(count: number): Promise<Range[]> {
    for (;;) {
      const ranges = this.takeNow(count);
      if (ranges) return ranges;
      const want = BigInt(count);
      if (this.#unreachable && mono() < this.#unreachable.until) {
        throw new IddError("UNAVAILABLE", `${this.#unreachable.failure.message}; no numbers left in memory`);
      }
      await (this.#claiming ?? this.#claim(Math.max(this.#sizer.size, Number(want - this.available))));
      if (this.#dropped) throw new IddError("INTERNAL", `counter ${this.key} was dropped while claiming`);
    }
  }

  /** `take` without waiting: the ranges when the blocks in memory hold `count` numbers, else undefined. */
  takeNow(count: number): Range[] | undefined {
    if (this.#dropped) throw new IddError("INTERNAL", `counter ${this.key} was dropped`);
    const want = BigInt(count);
    if (this.available < want) return undefined;
    const now = mono();
    const out = this.#blocks.take(want, () => {
      this.#sizer.blockUsed(now - this.#blockStartedAt);
      this.#blockStartedAt = now;
    });
    this.#rate.add(count, now);
    this.issuedSinceSample += count;
    if (!this.#claiming && this.available < BigInt(Math.ceil(this.#sizer.size * this.#d.config.prefetchAt))) {
      this.#claim(this.#sizer.size).catch(() => {}); // prefetch; a failure shows again when take() needs the block
    }
    return out;
  }

  /**
   * Claims ahead what `count` more numbers need beyond the blocks in memory (or waits for the claim
   * in flight), without taking any: a step learns all its counters' needs first and claims for them
   * at once, instead of waiting on one counter after another. Failures are left to `take`.
   */
  async prepare(count: number): Promise<void> {
    // Never more than one block beyond what take() would claim: the gap bound of G4 holds.
    const want = BigInt(Math.min(count, this.#d.config.maxBlock));
    if (this.#dropped || this.available >= want) return;
    if (this.#unreachable && mono() < this.#unreachable.until) return;
    await (this.#claiming ?? this.#claim(Math.max(this.#sizer.size, Number(want - this.available)))).catch(() => {});
  }

  /** Resolves once no claim or raise of this counter is in flight (its grant is then in the log). */
  async idle(): Promise<void> {
    while (this.#claiming || this.#reservation.raising) await Promise.allSettled([this.#claiming, this.#reservation.raising]);
  }

  /** Forgets every unissued number (I3: on losing the partition they are never reused), releasing them for `why`. */
  drop(why: ReleaseWhy): bigint {
    const lost = this.available;
    const unissued = this.#blocks.clear();
    if (unissued.length > 0) this.#d.release(this, unissued, why);
    if (!this.#claiming) this.#releaseLogged(why); // else when the claim in flight ends
    this.#dropped = true;
    this.#droppedWhy = why;
    return lost;
  }

  /** The claim kept for a retry will not be retried: a block its write-ahead left in the batched log is given up. */
  #forgetClaim(): void {
    this.#claimId = undefined;
    this.#releaseLogged("claim-unused");
  }

  /** Gives up the block whose grant is in the batched log but was never used (no release: the audit would call it a death). */
  #releaseLogged(why: ReleaseWhy): void {
    const b = this.#logged;
    if (!b) return;
    this.#logged = undefined;
    this.#d.release(this, [{ first: b.first, last: b.last }], why);
  }

  #claim(size: number): Promise<void> {
    const p = this.#claimOnce(size)
      .then(
        () => {
          this.#unreachable = undefined;
        },
        (e: unknown) => {
          if (e instanceof IddError) throw e;
          // A store refused, reset or timed out: don't make every request wait for it again.
          const failure = claimFailure(this.key, e);
          this.#unreachable = { until: mono() + UNREACHABLE_RETRY_MS, failure };
          throw failure;
        },
      )
      .finally(() => {
        if (this.#claiming === p) this.#claiming = undefined;
        if (this.#dropped) this.#releaseLogged(this.#droppedWhy);
      });
    this.#claiming = p;
    return p;
  }

  /** One claim: attempts until one is granted (claim-loop.ts), or the refusal's error. */
  async #claimOnce(size: number): Promise<void> {
    if (this.#d.grants.full) {
      throw new IddError("UNAVAILABLE", `grant log backlog full (${this.#d.grants.buffered} records): MongoDB is not taking appends`);
    }
    const gen = this.gen;
    if (gen === undefined)
      throw new IddError("UNAVAILABLE", `${this.key}: no gen for its partition (Redis was unreachable when it was taken)`);
    const r = this.#reservation;
    const { scripts, store, worker } = this.#d;
    await claimLoop({
      attempt: () => this.#attempt(size, gen),
      raise: () => r.raise(),
      // Fenced by its epoch; undefined: another restore stood, read its epoch.
      restore: async (stale) => {
        r.epoch = await restoreOne({ scripts, store, worker }, this.def, this.period, stale);
      },
      staleEpoch: () => r.staleEpoch(),
      sleep,
    });
  }

  /**
   * One claim attempt under the counter's epoch: the block is in memory (`granted`; or given up, if
   * the counter was dropped meanwhile), or what happened instead. Failures that end the claim throw.
   */
  async #attempt(size: number, gen: number): Promise<"granted" | ClaimRefused> {
    const epoch = await this.#reservation.current();
    this.#d.stats.redisCalls++;
    // Kept while the outcome is unknown (no answer) or the block's grant is not written yet: the
    // retry gets the same block if the claim ran, instead of burning another.
    this.#claimId ??= randomUUID();
    const claimId = this.#claimId;
    const adopt = !this.#d.claimedUnder.has(this.def.name, gen);
    const strict = this.def.grantLog === "strict";
    let r: Awaited<ReturnType<Scripts["claim"]>>;
    try {
      r = await this.#d.scripts.claim({
        sequence: this.def.name,
        period: this.period,
        size,
        epoch: String(epoch),
        claimId,
        gen,
        adopt,
        worker: this.#d.worker,
        writeAhead: strict,
        atMs: Date.now(),
      });
    } catch (e) {
      if (e instanceof IddError) this.#forgetClaim(); // answered: the claim did not run
      throw e;
    }
    if ("refused" in r) {
      this.#forgetClaim(); // answered: the claim did not run
      return r;
    }
    const b = r.granted;
    this.#d.claimedUnder.note(this.def.name, gen);
    if (b.first <= this.#lastClaimed) {
      this.#forgetClaim();
      // Redis handed out a number this worker already claimed: it lost writes (a failover).
      throw new IddError(
        "REDIS_STATE_LOST",
        `${this.key}: Redis granted ${b.first} after ${this.#lastClaimed} without changing its node identity; run \`idd replay\``,
      );
    }
    const grant: Grant = {
      claim: claimId,
      sequence: this.def.name,
      period: this.period,
      first: b.first,
      last: b.last,
      epoch,
      worker: this.#d.worker,
      at: new Date(),
    };
    const abandoned = abandonedRecords(b.previous, this.#written, grant, this.#d.worker);
    if (strict) {
      const refused = await this.#writeAhead(grant, abandoned);
      if (refused) return refused;
    } else {
      this.#claimId = undefined;
      this.#d.grants.push(grant, ...abandoned);
    }
    if (this.#dropped) {
      // claimed after losing the partition: never issued (a gap, not a duplicate)
      this.#d.release(this, [{ first: b.first, last: b.last }], this.#droppedWhy);
      return "granted";
    }
    this.#blocks.push(b);
    this.#reservation.max = b.max;
    this.#lastClaimed = b.last;
    this.#d.events?.emit("allocation.claimed", {
      sequence: this.def.name,
      period: this.period,
      size: Number(b.last - b.first + 1n),
      first: b.first,
      last: b.last,
    });
    if (this.#reservation.low()) this.#reservation.raise().catch(() => {});
    return "granted";
  }

  /**
   * Write-ahead: the grant is durable before use, so replay can restore cur to the highest grant (I4).
   * A replay that fenced the counter meanwhile may not have seen it: then the block is not used
   * (`fenced`, or `stale` when MongoDB holds a newer epoch). A block whose write fails is not used
   * either: its grant goes to the batched log (the numbers Redis handed out are in MongoDB once it is
   * back), and the claim id is kept, so the next try takes the same block from Redis and writes its
   * grant then (the same _id: written once). Undefined: the block may be used.
   */
  async #writeAhead(grant: Grant, abandoned: Grant[]): Promise<ClaimRefused | undefined> {
    const { claim: claimId, first, last, epoch } = grant;
    let outcome: GrantOutcome;
    try {
      outcome = await this.#d.store.writeGrant(grant, abandoned);
    } catch (e) {
      if (this.#logged?.claim !== claimId) {
        this.#logged = { claim: claimId, first, last };
        this.#d.grants.push(grant, ...abandoned);
      }
      if (e instanceof IddError) throw e;
      // MongoDB answered but refused the write (not a lost connection): its failure, not Redis's.
      const why = `MongoDB refused the grant of block ${first}..${last}: ${(e as Error).message}`;
      throw new IddError("UNAVAILABLE", `${this.key}: ${why}`, { cause: e });
    }
    this.#claimId = undefined;
    this.#logged = undefined; // written now: used, or released below
    this.#written.push(claimId);
    if (this.#written.length > WRITTEN_KEPT) this.#written.shift();
    if (outcome === "abandoned") {
      // The counter's next claim recorded this one as abandoned before its grant got in: it is
      // never used (the audit says none of it was issued).
      const error = new IddError("CLAIM_ABANDONED", `${this.key}: block ${first}..${last} was recorded as an abandoned claim`);
      return { refused: "abandoned", error };
    }
    // The grant is written: the block is used, or released. A check that cannot be made (Redis
    // failing over, MongoDB down) releases it too: it is never used.
    const unused = () => this.#d.release(this, [{ first, last }], "claim-unused");
    const refused = await this.#fencedMeanwhile(epoch).catch((e: unknown) => {
      unused();
      throw e;
    });
    if (refused) unused();
    return refused;
  }

  /** Whether a replay fenced the counter while its grant was written: in Redis, or in MongoDB (a restore on another Redis). */
  async #fencedMeanwhile(epoch: number): Promise<ClaimRefused | undefined> {
    this.#d.stats.redisCalls++;
    if ((await this.#d.redis.hget(this.key, "epoch")) !== String(epoch))
      return { refused: "fenced", error: new IddError("REDIS_FENCED", `${this.key} was fenced while its grant was written`) };
    // A restore on another Redis (a split brain) appends its epoch before it reads the grants, so
    // a grant written before that is restored above; one after is not used.
    const inForce = await this.#d.store.getReservation(this.def.name, this.period);
    if (!inForce || inForce.epoch <= epoch) return undefined;
    this.#reservation.epoch = undefined;
    const why = `${this.key}: epoch ${epoch} was superseded by ${inForce.epoch} while its grant was written`;
    return { refused: "stale", error: new IddError("REDIS_FENCED", why) };
  }
}
