/**
 * One (sequence, period) counter as a worker sees it: unissued blocks held in memory in claim order,
 * handed out front first, so numbers leave strictly increasing. Redis is touched once per block:
 * the next block is claimed while the current one still has numbers (double buffer), sized by the
 * measured rate. The reservation is raised in MongoDB first, then in Redis (I1), ahead of need, so
 * that a few minutes of consumption always fit in the headroom.
 */
import { randomUUID } from "node:crypto";
import { IddError, isIddError } from "../core/errors.js";
import type { Instrumentation } from "../core/events.js";
import type { Range } from "../core/range.js";
import type { RedisClient } from "../redis/client-type.js";
import { counterKey } from "../redis/keys.js";
import type { Block, ClaimRecord, Scripts } from "../redis/scripts.js";
import type { SequenceDef } from "../sequences/definition.js";
import type { AppendLog } from "../storage/append-log.js";
import type { Grant, GrantOutcome } from "../storage/grants.js";
import type { ReleaseWhy } from "../storage/releases.js";
import type { Store } from "../storage/store.js";
import { BlockSizer, type BlockSizing, Rate } from "./block-sizer.js";
import { restoreOne } from "./restore.js";

export interface AllocationConfig extends BlockSizing {
  /** Claim the next block when fewer than this fraction of a block is left. */
  prefetchAt: number;
  /** Raise the reservation when the headroom covers less than this much consumption… */
  reserveLowMs: number;
  /** …to cover this much. */
  reserveAheadMs: number;
  /** Never reserve fewer numbers than this at once. */
  minReservation: number;
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
  clock: () => number;
  /** Redis round trips, for tests and metrics. */
  stats: { redisCalls: number };
  events?: Instrumentation;
}

/** What a counter holds, for metrics and the status page. */
export interface CounterSnapshot {
  sequence: string;
  period: string | null;
  /** Unissued numbers in this worker's memory. */
  inMemory: bigint;
  /** Numbers reserved in MongoDB above what this worker claimed: what it can still claim from Redis if MongoDB goes down. */
  headroom: bigint;
  /** Numbers a second this worker issued lately. */
  ratePerSecond: number;
  /** The size of the next block. */
  blockSize: number;
}

const INITIAL_EPOCH = 1;
/** Claims this counter remembers having written: Redis returns the three claims before each one. */
const WRITTEN_KEPT = 4;
/** After a claim failed on an unreachable Redis, takes that need a block fail at once for this long. */
const UNREACHABLE_RETRY_MS = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Counter {
  readonly def: SequenceDef;
  readonly period: string | null;
  readonly key: string;
  /** The gen of the sequence's home partition this counter claims under (undefined: none could be taken, Redis was unreachable). */
  readonly gen: number | undefined;
  readonly #d: CounterDeps;
  readonly #blocks: Range[] = [];
  /** Numbers in #blocks, kept as they change (takes read it twice). */
  #available = 0n;
  readonly #sizer: BlockSizer;
  readonly #rate: Rate;
  #epoch: number | undefined;
  #max = -1n;
  #lastClaimed = -1n;
  #claiming: Promise<void> | undefined;
  #raising: Promise<void> | undefined;
  #blockStartedAt: number;
  #dropped = false;
  /** Why the counter was dropped: a block claimed after that is given up for the same reason. */
  #droppedWhy: ReleaseWhy = "stopped";
  /** The id of a claim Redis did not answer (it may have run) or whose grant is not written yet; sent again by the next claim. */
  #claimId: string | undefined;
  /** The claim ids of the last grants this counter wrote before use (at most WRITTEN_KEPT). */
  readonly #written: string[] = [];
  /** The claim id whose grant went to the batched log after its write-ahead failed (once per claim: every retry gets the same block). */
  #logged: string | undefined;
  /** Until when takes that need a block fail fast (Redis did not answer the last claim). */
  #unreachable: { until: number; message: string } | undefined;
  /** Numbers issued since the last sample. */
  issuedSinceSample = 0;

  constructor(def: SequenceDef, period: string | null, gen: number | undefined, deps: CounterDeps) {
    this.def = def;
    this.period = period;
    this.gen = gen;
    this.key = counterKey(def.name, period);
    this.#d = deps;
    this.#sizer = new BlockSizer(deps.config);
    this.#rate = new Rate(deps.clock());
    this.#blockStartedAt = deps.clock();
  }

  snapshot(): CounterSnapshot {
    const headroom = this.#max > this.#lastClaimed ? this.#max - this.#lastClaimed : 0n;
    return {
      sequence: this.def.name,
      period: this.period,
      inMemory: this.available,
      headroom,
      ratePerSecond: this.#rate.perSecond,
      blockSize: this.#sizer.size,
    };
  }

  get available(): bigint {
    return this.#available;
  }

  /** Issues `count` numbers as ranges in increasing order (adjacent ranges merged). */
  async take(count: number): Promise<Range[]> {
    for (;;) {
      const ranges = this.takeNow(count);
      if (ranges) return ranges;
      const want = BigInt(count);
      if (this.#unreachable && this.#d.clock() < this.#unreachable.until) {
        throw new IddError("UNAVAILABLE", `${this.key}: Redis unreachable (${this.#unreachable.message}); no numbers left in memory`);
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
    const now = this.#d.clock();
    const out: Range[] = [];
    let left = want;
    while (left > 0n) {
      const b = this.#blocks[0] as Range;
      const size = b.last - b.first + 1n;
      const takeN = size < left ? size : left;
      const r = { first: b.first, last: b.first + takeN - 1n };
      const prev = out.at(-1);
      if (prev && prev.last + 1n === r.first) prev.last = r.last;
      else out.push(r);
      left -= takeN;
      if (takeN === size) {
        this.#blocks.shift();
        this.#sizer.blockUsed(now - this.#blockStartedAt);
        this.#blockStartedAt = now;
      } else {
        b.first += takeN;
      }
    }
    this.#available -= want;
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
    if (this.#unreachable && this.#d.clock() < this.#unreachable.until) return;
    await (this.#claiming ?? this.#claim(Math.max(this.#sizer.size, Number(want - this.available)))).catch(() => {});
  }

  /** Resolves once no claim or raise of this counter is in flight (its grant is then in the log). */
  async idle(): Promise<void> {
    while (this.#claiming || this.#raising) await Promise.allSettled([this.#claiming, this.#raising]);
  }

  /** Forgets every unissued number (I3: on losing the partition they are never reused), releasing them for `why`. */
  drop(why: ReleaseWhy): bigint {
    const lost = this.available;
    if (this.#blocks.length > 0) this.#d.release(this, this.#blocks.splice(0), why);
    this.#available = 0n;
    this.#dropped = true;
    this.#droppedWhy = why;
    return lost;
  }

  #claim(size: number): Promise<void> {
    const p = this.#claimOnce(size)
      .then(
        () => {
          this.#unreachable = undefined;
        },
        (e: unknown) => {
          if (e instanceof IddError) throw e;
          // Redis refused, reset or timed out: don't make every request wait for it again.
          const message = (e as Error).message;
          this.#unreachable = { until: this.#d.clock() + UNREACHABLE_RETRY_MS, message };
          throw new IddError("UNAVAILABLE", `${this.key}: Redis unreachable (${message})`, { cause: e });
        },
      )
      .finally(() => {
        if (this.#claiming === p) this.#claiming = undefined;
      });
    this.#claiming = p;
    return p;
  }

  async #claimOnce(size: number): Promise<void> {
    if (this.#d.grants.full) {
      throw new IddError("UNAVAILABLE", `grant log backlog full (${this.#d.grants.buffered} records): MongoDB is not taking appends`);
    }
    const gen = this.gen;
    if (gen === undefined)
      throw new IddError("UNAVAILABLE", `${this.key}: no gen for its partition (Redis was unreachable when it was taken)`);
    let raise = false;
    const tries = { exhausted: 0, restored: 0, fenced: 0, abandoned: 0 };
    for (;;) {
      try {
        if (raise) await this.#raise();
        raise = false;
        const epoch = this.#epoch ?? (await this.#loadEpoch());
        this.#d.stats.redisCalls++;
        // Kept while the outcome is unknown (no answer) or the block's grant is not written yet: the
        // retry gets the same block if the claim ran, instead of burning another.
        this.#claimId ??= randomUUID();
        const claimId = this.#claimId;
        const adopt = !this.#d.claimedUnder.has(this.def.name, gen);
        const strict = this.def.grantLog === "strict";
        let b: Block;
        try {
          b = await this.#d.scripts.claimBlock({
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
          if (e instanceof IddError) this.#claimId = undefined; // answered: the claim did not run
          throw e;
        }
        this.#d.claimedUnder.note(this.def.name, gen);
        if (b.first <= this.#lastClaimed) {
          this.#claimId = undefined;
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
        const abandoned = this.#abandonedRecords(b.previous);
        if (strict) {
          // Write-ahead: durable before use, so replay can restore cur to the highest grant (I4). A
          // replay that fenced the counter meanwhile may not have seen it: then the block is not used.
          // A block whose write fails is not used either: its grant goes to the batched log (the numbers
          // Redis handed out are in MongoDB once it is back), and the claim id is kept, so the next try
          // takes the same block from Redis and writes its grant then (the same _id: written once).
          let outcome: GrantOutcome;
          try {
            outcome = await this.#d.store.writeGrant(grant, abandoned);
          } catch (e) {
            if (this.#logged !== claimId) {
              this.#logged = claimId;
              this.#d.grants.push(grant, ...abandoned);
            }
            if (e instanceof IddError) throw e;
            // MongoDB answered but refused the write (not a lost connection): its failure, not Redis's.
            const why = `MongoDB refused the grant of block ${b.first}..${b.last}: ${(e as Error).message}`;
            throw new IddError("UNAVAILABLE", `${this.key}: ${why}`, { cause: e });
          }
          this.#claimId = undefined;
          this.#written.push(claimId);
          if (this.#written.length > WRITTEN_KEPT) this.#written.shift();
          if (outcome === "abandoned") {
            // The counter's next claim recorded this one as abandoned before its grant got in: it is
            // never used (the audit says none of it was issued).
            throw new IddError("CLAIM_ABANDONED", `${this.key}: block ${b.first}..${b.last} was recorded as an abandoned claim`);
          }
          this.#d.stats.redisCalls++;
          if ((await this.#d.redis.hget(this.key, "epoch")) !== String(epoch)) {
            this.#d.release(this, [{ first: b.first, last: b.last }], "claim-unused");
            throw new IddError("REDIS_FENCED", `${this.key} was fenced while its grant was written`);
          }
          // And in MongoDB: a restore on another Redis (a split brain) appends its epoch before it
          // reads the grants, so a grant written before that is restored above; one after is not used.
          const inForce = await this.#d.store.getReservation(this.def.name, this.period);
          if (inForce && inForce.epoch > epoch) {
            this.#epoch = undefined;
            this.#d.release(this, [{ first: b.first, last: b.last }], "claim-unused");
            throw new IddError(
              "REDIS_FENCED",
              `${this.key}: epoch ${epoch} was superseded by ${inForce.epoch} while its grant was written`,
            );
          }
        } else {
          this.#claimId = undefined;
          this.#d.grants.push(grant, ...abandoned);
        }
        if (this.#dropped) {
          // claimed after losing the partition: never issued (a gap, not a duplicate)
          this.#d.release(this, [{ first: b.first, last: b.last }], this.#droppedWhy);
          return;
        }
        this.#blocks.push({ first: b.first, last: b.last });
        this.#available += b.last - b.first + 1n;
        this.#max = b.max;
        this.#lastClaimed = b.last;
        this.#d.events?.emit("allocation.claimed", {
          sequence: this.def.name,
          period: this.period,
          size: Number(b.last - b.first + 1n),
          first: b.first,
          last: b.last,
        });
        if (this.#headroomLow()) this.#raise().catch(() => {});
        return;
      } catch (e) {
        if (isIddError(e, "CLAIM_ABANDONED") && tries.abandoned++ < 3) continue; // a fresh claim
        if (isIddError(e, "REDIS_EXHAUSTED") && tries.exhausted++ < 3) {
          raise = true;
          continue;
        }
        if ((isIddError(e, "REDIS_STATE_MISSING") || isIddError(e, "REDIS_STATE_SUSPECT")) && tries.restored++ < 3) {
          // Redis lost the counter, or it may have gone back in time (another node wrote it): restore
          // it from MongoDB (§5.11), fenced by its epoch; undefined: another restore stood, read its epoch.
          this.#epoch = await restoreOne({ scripts: this.#d.scripts, store: this.#d.store, worker: this.#d.worker }, this.def, this.period);
          continue;
        }
        if (isIddError(e, "REDIS_FENCED") && tries.fenced++ < 30) {
          this.#epoch = undefined;
          const stale = await this.#staleEpoch();
          if (stale !== undefined && tries.restored++ < 3) {
            // Not a restore in progress: this Redis holds the counter under an epoch a restore on
            // another Redis superseded (a split brain, or a failover back). Restored here from
            // MongoDB, it continues above every reservation that may have been used elsewhere.
            this.#epoch = await restoreOne(
              { scripts: this.#d.scripts, store: this.#d.store, worker: this.#d.worker },
              this.def,
              this.period,
              stale,
            );
            continue;
          }
          // A restore is rewriting this counter: read the epoch it records in MongoDB and try again.
          await sleep(100);
          continue;
        }
        throw e;
      }
    }
  }

  /** The counter's epoch in Redis when it is a number below MongoDB's epoch in force (not a restore's fence token). */
  async #staleEpoch(): Promise<number | undefined> {
    this.#d.stats.redisCalls++;
    const held = await this.#d.redis.hget(this.key, "epoch");
    if (held === null || !/^\d+$/.test(held)) return undefined;
    const inForce = await this.#d.store.getReservation(this.def.name, this.period);
    return inForce && inForce.epoch > Number(held) ? Number(held) : undefined;
  }

  /**
   * The counter's earlier claims as abandoned claim records, when they may need one (design G4):
   * write-ahead claims that are not among this counter's own written ones. Their claimants may have
   * stopped between the claim and its grant; where the grant exists, the record is refused by its `_id`.
   */
  #abandonedRecords(claims: ClaimRecord[]): Grant[] {
    return claims
      .filter((p) => p.writeAhead && !this.#written.includes(p.id))
      .map((p) => ({
        claim: p.id,
        sequence: this.def.name,
        period: this.period,
        first: p.first,
        last: p.last,
        epoch: p.epoch,
        worker: p.worker,
        at: p.at,
        abandoned: { gen: p.gen, by: this.#d.worker, at: new Date() },
      }));
  }

  /**
   * Reads the fence epoch from MongoDB. A counter never reserved before is created here: its first
   * reservation is recorded in MongoDB, then the Redis counter is created if absent (I1), under this
   * node's identity. A counter MongoDB knows but Redis lacks is restored at the claim (-1).
   */
  async #loadEpoch(): Promise<number> {
    const existing = await this.#d.store.getReservation(this.def.name, this.period);
    if (existing) {
      this.#epoch = existing.epoch;
      return existing.epoch;
    }
    const max = this.#capped(this.def.start - 1n + BigInt(this.#reserveSize()));
    await this.#d.store.appendReservation({
      sequence: this.def.name,
      period: this.period,
      max,
      epoch: INITIAL_EPOCH,
      worker: this.#d.worker,
    });
    try {
      this.#d.stats.redisCalls++;
      await this.#d.scripts.initCounter({
        sequence: this.def.name,
        period: this.period,
        cur: this.def.start - 1n,
        max,
        epoch: String(INITIAL_EPOCH),
      });
    } catch (e) {
      if (!isIddError(e, "REDIS_COUNTER_EXISTS")) throw e; // created meanwhile by another worker
    }
    this.#epoch = INITIAL_EPOCH;
    return INITIAL_EPOCH;
  }

  #reserveSize(): number {
    const { reserveAheadMs, minReservation } = this.#d.config;
    return Math.max(minReservation, Math.ceil((this.#rate.perSecond * reserveAheadMs) / 1000), 4 * this.#sizer.size);
  }

  #capped(n: bigint): bigint {
    return n > this.def.maxValue ? this.def.maxValue : n;
  }

  #headroomLow(): boolean {
    const headroom = Number(this.#max - this.#lastClaimed);
    const low = Math.max((this.#rate.perSecond * this.#d.config.reserveLowMs) / 1000, 2 * this.#sizer.size);
    return headroom < low && this.#max < this.def.maxValue;
  }

  /** Raises the reservation in MongoDB, then Redis's max to it (I1). Serialized per counter. */
  #raise(): Promise<void> {
    this.#raising ??= (async () => {
      const epoch = this.#epoch ?? (await this.#loadEpoch());
      // MongoDB's reservation is the authority and may be ahead of what this worker has seen.
      let from = (await this.#d.store.getReservation(this.def.name, this.period))?.max ?? -1n;
      for (let round = 0; round < 3; round++) {
        if (this.#max > from) from = this.#max;
        if (this.#lastClaimed > from) from = this.#lastClaimed;
        const target = this.#capped(from + BigInt(this.#reserveSize()));
        if (target <= from) {
          const which = this.period === null ? "" : ` in period ${this.period}`;
          throw new IddError("SEQUENCE_EXHAUSTED", `sequence "${this.def.name}" reached its maxValue ${this.def.maxValue}${which}`);
        }
        const inForce = await this.#d.store.reserve({
          sequence: this.def.name,
          period: this.period,
          max: target,
          epoch,
          worker: this.#d.worker,
        });
        if (inForce.epoch > epoch) {
          // A restore under a newer epoch superseded this worker's (on another Redis, in a split
          // brain): the reservation just appended is void, and Redis's max stays where it was.
          this.#epoch = undefined;
          throw new IddError("REDIS_FENCED", `${this.key}: epoch ${epoch} was superseded by ${inForce.epoch}; raise to ${target} not used`);
        }
        this.#d.stats.redisCalls++;
        this.#max = await this.#d.scripts.raiseMax({ sequence: this.def.name, period: this.period, max: target, epoch: String(epoch) });
        this.#d.events?.emit("allocation.raised", { sequence: this.def.name, period: this.period, max: target });
        // Redis above the target: this worker read MongoDB before another raise (or replay) was
        // visible. Redis's max is itself recorded (I1), so raise again from there.
        if (this.#max <= target) return;
      }
    })().finally(() => {
      this.#raising = undefined;
    });
    return this.#raising;
  }
}
