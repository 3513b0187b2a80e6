/**
 * The snowflake ids of every snowflake sequence one worker serves: per sequence a worker id leased
 * from Redis (lease.ts, acquired on first use and renewed on a timer) and a generator
 * (generator.ts). A take is synchronous while the lease holds and the time unit has room; it waits
 * out a full unit or a small backward clock step, and acquires a lease again after losing one.
 */
import { performance } from "node:perf_hooks";
import { Breaker } from "../../../core/breaker.js";
import { IddError, isIddError } from "../../../core/errors.js";
import type { Instrumentation } from "../../../core/events.js";
import type { Range } from "../../../core/range.js";
import type { RedisClient } from "../../../redis/client-type.js";
import { Scripts } from "../../../redis/scripts.js";
import { type Forecast, snowflakeForecasts } from "../../../sequences/capacity.js";
import type { SequenceDef, SnowflakeDef } from "../../../sequences/sequence-def.js";
import { freeWorkerIds } from "./free-ids.js";
import { type GeneratorSettings, SnowflakeGenerator } from "./generator.js";
import { type LeaseSettings, WorkerLease } from "./lease.js";

export interface SnowflakeIssuerOptions {
  /** A connection with idd's scripts defined. */
  redis: RedisClient;
  lease?: Partial<LeaseSettings>;
  generator?: Partial<GeneratorSettings>;
  clock?: () => number;
  /** Receives snowflake.lease and snowflake.clock_backwards. */
  events?: Instrumentation;
  /** Whether a sequence whose state Redis lacks is new (see LeaseOptions.firstLease; first-lease.ts). */
  firstLease?: (sequence: string) => Promise<boolean>;
}

interface Entry {
  def: SnowflakeDef;
  /** Worker ids not leased, as last counted (countFreeWorkerIds); undefined before the first count. */
  freeWorkerIds?: number;
  generator: SnowflakeGenerator;
  lease: WorkerLease;
  ready: Promise<unknown>;
}

export class SnowflakeIssuer {
  readonly #o: SnowflakeIssuerOptions;
  readonly #entries = new Map<string, Entry>();
  readonly #scripts: Scripts;
  readonly stats = { clockBackwards: 0, leaseLost: 0 };
  /**
   * The leases' Redis calls (acquire, renew): a failure opens it, and for a second they fail at once,
   * then one probes (as the dispenser's own Redis calls do, redis-guard.ts). Without it, a worker cut
   * from Redis by a silent link had every snowflake batch wait the command timeout (issue #28).
   */
  readonly #breaker = new Breaker({
    what: "Redis",
    retryMs: 1000,
    isFailure: (e) => !(e instanceof IddError),
    clock: () => performance.now(),
  });

  constructor(o: SnowflakeIssuerOptions) {
    this.#o = o;
    this.#scripts = new Scripts(o.redis);
  }

  #entry(def: SequenceDef): Entry {
    let e = this.#entries.get(def.name);
    if (!e) {
      if (def.kind !== "snowflake") throw new Error(`sequence "${def.name}" has no snowflake layout`);
      const layout = def.snowflake;
      const lease = new WorkerLease({
        redis: this.#o.redis,
        sequence: def.name,
        workerBits: layout.workerBits,
        ...this.#o.lease,
        ...(this.#o.clock && { clock: this.#o.clock }),
        ...(this.#o.firstLease && { firstLease: this.#o.firstLease }),
        guard: (call) => this.#breaker.run(call),
        onEvent: (x) => {
          if (x.type === "acquired" || x.type === "lost" || x.type === "released")
            this.#o.events?.emit("snowflake.lease", { sequence: def.name, workerId: x.type === "acquired" ? x.workerId : null });
        },
      });
      const generator = new SnowflakeGenerator({ layout, lease, ...this.#o.generator });
      e = { def, generator, lease, ready: Promise.resolve() };
      this.#entries.set(def.name, e);
      this.#acquire(def.name, e);
    }
    return e;
  }

  /** (Re)acquires the entry's lease; a failed acquire drops the entry, so the next take starts afresh. */
  #acquire(name: string, e: Entry): Promise<unknown> {
    e.ready = e.lease.acquire();
    e.ready.catch(() => {
      if (this.#entries.get(name) === e) this.#entries.delete(name);
    });
    return e.ready;
  }

  /**
   * Raises `sequence`'s fence to `gen` (its first use under it, lua/fenceSnowflake-2.lua) and returns
   * the largest id an issuer recorded as answered (lua/recordAnswers-n.lua; undefined: none, or Redis
   * lost it). Throws WORKER_FENCED when a newer gen holds the fence.
   */
  fence(sequence: string, gen: number): Promise<bigint | undefined> {
    return this.#scripts.fenceSnowflake({ sequence, gen });
  }

  /** From now on, ids of `def` only above `id` (an id another worker answered): see SnowflakeGenerator.raiseFloor. */
  async raiseFloor(def: SequenceDef, id: bigint): Promise<void> {
    const e = this.#entry(def);
    await e.ready;
    e.generator.raiseFloor(id);
  }

  /** `count` ids of a snowflake sequence, in increasing order. */
  async take(def: SequenceDef, count: number): Promise<Range[]> {
    const e = this.#entry(def);
    await e.ready;
    try {
      // Synchronous (no await per id) while the lease holds and the time unit has room.
      return count <= e.generator.maxTake ? e.generator.take(count) : await e.generator.takeAsync(count);
    } catch (x) {
      if (isIddError(x, "SNOWFLAKE_WAIT")) return e.generator.takeAsync(count);
      if (isIddError(x, "CLOCK_BACKWARDS")) {
        this.stats.clockBackwards++;
        this.#o.events?.emit("snowflake.clock_backwards", { sequence: def.name });
      }
      if (!isIddError(x, "LEASE_LOST")) throw x;
      // Lapsed (this process was stopped past the TTL, or Redis lost the key): nothing was issued
      // with it; acquire again (the same id if Redis still shows it ours) and take once more.
      this.stats.leaseLost++;
      await this.#acquire(def.name, e);
      return e.generator.takeAsync(count);
    }
  }

  /** The forecasts of the snowflake sequences this worker issues (src/sequences/capacity.ts): time field, and worker ids once counted. */
  forecasts(now = Date.now()): { sequence: string; forecasts: Forecast[] }[] {
    return [...this.#entries.values()].map((e) => ({ sequence: e.def.name, forecasts: snowflakeForecasts(e.def, now, e.freeWorkerIds) }));
  }

  /**
   * Counts each served sequence's free worker ids (free-ids.ts), through the leases' breaker. Off the
   * request path (the capacity watch calls it every IDD_SAMPLE_MS); a failure keeps the last count.
   */
  async countFreeWorkerIds(): Promise<void> {
    for (const e of [...this.#entries.values()]) {
      const name = e.def.name;
      await this.#breaker
        .run(async () => {
          e.freeWorkerIds = await freeWorkerIds(this.#o.redis, name, e.def.snowflake.workerBits);
        })
        .catch(() => {});
    }
  }

  /** Gives every worker id back (lowering its bound to the latest time issued at). */
  async close(): Promise<void> {
    await Promise.all([...this.#entries.values()].map((e) => e.ready.then(() => e.generator.close()).catch(() => {})));
    this.#entries.clear();
  }
}
