/**
 * All counters of one worker, and the counters as a number source (../number-source.ts): a
 * request's serials from its counter's blocks in memory, or a claim when they do not suffice; a
 * cold step claims for all its counters at once (`prepare`). Counters are created on first use per
 * (sequence, period), dropped when the worker loses the partition their sequence lives on (I3) or
 * a daily sequence's next day begins, and sampled for consumption.
 */
import type { Instrumentation } from "../../../core/events.js";
import type { Range } from "../../../core/range.js";
import type { IdRequest } from "../../../protocol/request.js";
import type { RedisClient } from "../../../redis/client-type.js";
import { counterKey } from "../../../redis/keys.js";
import { Scripts } from "../../../redis/scripts.js";
import type { SequenceDef } from "../../../sequences/definition.js";
import { AppendLog } from "../../../storage/append-log.js";
import type { Grant } from "../../../storage/grants.js";
import type { Release, ReleaseWhy } from "../../../storage/releases.js";
import type { Sample } from "../../../storage/samples.js";
import type { Store } from "../../../storage/store.js";
import type { BatchTake } from "../../batch.js";
import type { NumberSource } from "../number-source.js";
import { type AllocationConfig, Counter, type CounterDeps, type CounterSnapshot } from "./counter.js";

export interface AllocatorOptions {
  redis: RedisClient;
  store: Store;
  worker: string;
  config: AllocationConfig;
  clock: () => number;
  flushMs: number;
  sampleMs: number;
  onLogError: (what: string, e: unknown, buffered: number) => void;
  events?: Instrumentation;
}

export class Allocator implements NumberSource {
  readonly #counters = new Map<string, Counter>();
  readonly #deps: CounterDeps;
  readonly #samples: AppendLog<Sample>;
  readonly #releases: AppendLog<Release>;
  readonly #o: AllocatorOptions;
  readonly #sampler: NodeJS.Timeout;
  #lastSample: number;
  readonly grants: AppendLog<Grant>;
  /** Per sequence, the last gen this worker claimed a block of it under. */
  readonly #claimedUnder = new Map<string, number>();
  readonly stats = { redisCalls: 0, dropped: 0n };
  /** Other sources of samples, closed with the counters' windows (gapless counters: src/issuing/sources/gapless/gapless-forecast.ts). */
  readonly #alsoSampled: ((windowMs: number) => Omit<Sample, "worker" | "at">[])[] = [];

  constructor(o: AllocatorOptions) {
    this.#o = o;
    const log = <T>(name: string, append: (batch: T[]) => Promise<void>) =>
      new AppendLog<T>(append, { flushMs: o.flushMs, maxBatch: 500, maxBuffered: 100_000, onError: (e, n) => o.onLogError(name, e, n) });
    this.grants = log<Grant>("grants", (b) => o.store.appendGrants(b));
    this.#samples = log<Sample>("samples", (b) => o.store.appendSamples(b));
    this.#releases = log<Release>("releases", (b) => o.store.appendReleases(b));
    this.#deps = {
      redis: o.redis,
      scripts: new Scripts(o.redis),
      claimedUnder: {
        has: (sequence, gen) => this.#claimedUnder.get(sequence) === gen,
        note: (sequence, gen) => void this.#claimedUnder.set(sequence, gen),
      },
      store: o.store,
      grants: this.grants,
      release: (c, ranges, why) => this.release(c.def, c.period, ranges, why),
      worker: o.worker,
      config: o.config,
      clock: o.clock,
      stats: this.stats,
      ...(o.events && { events: o.events }),
    };
    this.#lastSample = o.clock();
    this.#sampler = setInterval(() => this.sample(), o.sampleMs);
    this.#sampler.unref();
  }

  /**
   * The counter of (def, period) claiming under `gen`, the gen of the sequence's home partition. A
   * counter of another gen (or definition) is dropped and made afresh: blocks are used only under the
   * gen they were claimed under (design I3). `gen` undefined (Redis unreachable when the partition
   * was taken): the counter in memory, whatever its gen.
   */
  counter(def: SequenceDef, period: string | null, gen: number | undefined): Counter {
    const key = counterKey(def.name, period);
    let c = this.#counters.get(key);
    const changed = c && c.def.updatedAt.getTime() !== def.updatedAt.getTime();
    if (!c || changed || (gen !== undefined && c.gen !== gen)) {
      if (c) this.stats.dropped += c.drop(changed ? "definition-changed" : "retaken");
      c = new Counter(def, period, gen, this.#deps);
      this.#counters.set(key, c);
      if (period !== null) this.#dropEarlierPeriods(def.name, period);
    }
    return c;
  }

  take(request: IdRequest, def: SequenceDef, period: string | null, batch: BatchTake): Range[] | Promise<Range[]> {
    const counter = this.counter(def, period, batch.gen);
    return counter.takeNow(request.count) ?? counter.take(request.count);
  }

  /** Claims the blocks `count` needs beyond what the counter holds in memory. */
  prepare(def: SequenceDef, period: string | null, count: number, batch: BatchTake): Promise<void> | undefined {
    const counter = this.counter(def, period, batch.gen);
    return counter.available >= BigInt(count) ? undefined : counter.prepare(count);
  }

  mustWait(def: SequenceDef, period: string | null, count: number, batch: BatchTake): boolean {
    return this.counter(def, period, batch.gen).available < BigInt(count);
  }

  /** What every counter of this worker holds now. */
  snapshots(): CounterSnapshot[] {
    return [...this.#counters.values()].map((c) => c.snapshot());
  }

  /** Drops every counter of these sequences for `why`, returning how many unissued numbers were given up. */
  dropSequences(names: Iterable<string>, why: ReleaseWhy): bigint {
    const set = new Set(names);
    let lost = 0n;
    for (const [key, c] of this.#counters) {
      if (set.has(c.def.name)) {
        lost += c.drop(why);
        this.#counters.delete(key);
      }
    }
    this.stats.dropped += lost;
    return lost;
  }

  /**
   * A daily sequence's new day ends the earlier days' counters: their unissued numbers are given up
   * (a gap in a closed period), so a long-running worker does not keep a counter per day forever.
   */
  #dropEarlierPeriods(name: string, period: string): void {
    for (const [key, c] of this.#counters) {
      if (c.def.name === name && c.period !== null && c.period < period) {
        this.stats.dropped += c.drop("period-ended");
        this.#counters.delete(key);
      }
    }
  }

  /**
   * Appends one sample per counter that issued numbers since the last sample; every counter keeps its
   * recent windows for its forecast's rate (Counter.closeSample).
   */
  sample(): void {
    const now = this.#o.clock();
    const windowMs = now - this.#lastSample;
    for (const c of this.#counters.values()) {
      const issued = c.closeSample(windowMs);
      if (issued === 0) continue;
      this.#samples.push({ sequence: c.def.name, period: c.period, issued, windowMs, worker: this.#o.worker, at: new Date(now) });
    }
    for (const close of this.#alsoSampled)
      for (const s of close(windowMs)) this.#samples.push({ ...s, worker: this.#o.worker, at: new Date(now) });
    this.#lastSample = now;
  }

  /** Closes `close`'s windows with the counters' each sample, and appends what it returns to `samples` with theirs. */
  sampleAlso(close: (windowMs: number) => Omit<Sample, "worker" | "at">[]): void {
    this.#alsoSampled.push(close);
  }

  /**
   * Numbers of `def` this worker gives up without answering them: recorded with why for audited
   * sequences (src/storage/releases.ts), in the next batch; nothing for the others.
   */
  release(def: SequenceDef, period: string | null, ranges: readonly Range[], why: ReleaseWhy): void {
    if (!def.audit) return;
    const at = new Date(this.#o.clock());
    for (const r of ranges)
      this.#releases.push({ sequence: def.name, period, first: r.first, last: r.last, why, worker: this.#o.worker, at });
  }

  /**
   * Waits for claims and raises in flight (their grants belong in the log), gives up what the
   * counters hold (`stopped`), then flushes the logs.
   */
  async close(): Promise<void> {
    clearInterval(this.#sampler);
    await Promise.all([...this.#counters.values()].map((c) => c.idle()));
    this.sample();
    for (const c of this.#counters.values()) this.stats.dropped += c.drop("stopped");
    this.#counters.clear();
    await Promise.all([this.grants.flush(), this.#samples.flush(), this.#releases.flush()]);
  }
}
