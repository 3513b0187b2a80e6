/**
 * Dispensers on the real Redis and MongoDB for tests that answer requests without Kafka: one
 * Redis connection and one database of the test's own, any number of dispensers ("workers") with
 * small blocks, request builders, and one `close` for all of it.
 */
import { randomUUID } from "node:crypto";
import type { Redis, RedisOptions } from "ioredis";
import pino from "pino";
import type { ServiceSettings } from "../../src/config/services.js";
import { Dispenser, type DispenserDeps } from "../../src/issuing/dispenser.js";
import type { Allocator } from "../../src/issuing/sources/counter/allocator.js";
import type { GaplessForecasts } from "../../src/issuing/sources/gapless/gapless-forecast.js";
import { GaplessSource } from "../../src/issuing/sources/gapless/gapless-source.js";
import { firstLeaseCheck } from "../../src/issuing/sources/snowflake/first-lease.js";
import { SnowflakeIssuer } from "../../src/issuing/sources/snowflake/issuer.js";
import { Ownership } from "../../src/ownership/ownership.js";
import type { IdReply } from "../../src/protocol/reply.js";
import type { IdRequest } from "../../src/protocol/request.js";
import { AnswerRecorder } from "../../src/recording/answer-recorder.js";
import { SequenceCache } from "../../src/sequences/cache.js";
import { Store } from "../../src/storage/store.js";
import { type SMALL_BLOCKS, testAllocator } from "./allocator.js";
import { MongoQueries } from "./mongo-queries.js";
import { scriptClient } from "./redis.js";

export interface RigDispenserOptions extends Partial<Pick<DispenserDeps, "hooks" | "kinds" | "events" | "maxFormatted">> {
  /** Request topic the gens are taken under: dispensers sharing one take partitions from each other. */
  topic?: string;
  partitions?: number[];
  clock?: () => number;
  autoCreate?: boolean;
  /** Sequence cache TTL (default 1 s), or a cache of the caller's. */
  sequences?: SequenceCache;
  dedupeWindowMs?: number;
  allocation?: Partial<typeof SMALL_BLOCKS>;
  snowflakes?: boolean;
  /** The snowflake issuer's wall clock (default Date.now): a worker whose clock is off. */
  snowflakeClock?: () => number;
  /** Told what the gapless source takes, as a worker's (src/worker/parts.ts); sampled with the allocator's counters. */
  gaplessForecasts?: GaplessForecasts;
  /** MongoDB's time as the gapless source reckons `expiresAt` from (default the store's): behind it, numbers issued that long ago. */
  serverNow?: () => Promise<number>;
}

export interface RigDispenser {
  d: Dispenser;
  allocator: Allocator;
  /** The dispenser's partition leases: `assigned` gives partitions and takes them away. */
  ownership: Ownership;
}

export class DispenserRig {
  readonly redis: Redis;
  readonly store: Store;
  /** The store's database, for what tests read and idd never does. */
  readonly queries: MongoQueries;
  readonly topic = `rig-${randomUUID()}`;
  readonly #closers: (() => Promise<unknown>)[] = [];

  /** `redisOptions`: the connection's (e.g. a command timeout, as a worker's has: IDD_REDIS_TIMEOUT_MS). */
  constructor(services: ServiceSettings, dbPrefix: string, redisOptions: RedisOptions = {}) {
    this.redis = scriptClient(services.redisUrl, redisOptions);
    const dbName = `${dbPrefix}_${randomUUID().replaceAll("-", "")}`;
    this.store = new Store(services.mongodbUrl, { dbName });
    this.queries = new MongoQueries(services.mongodbUrl, dbName);
  }

  dispenser(o: RigDispenserOptions = {}): RigDispenser {
    const clock = o.clock ?? Date.now;
    const worker = `rig-${randomUUID().slice(0, 8)}`;
    const allocator = testAllocator({
      redis: this.redis,
      store: this.store,
      worker,
      ...(o.allocation && { config: o.allocation }),
      clock,
    });
    this.#closers.push(() => allocator.close());
    const forecasts = o.gaplessForecasts;
    if (forecasts) allocator.sampleAlso((ms) => forecasts.closeSample(ms));
    const snowflakes = o.snowflakes
      ? new SnowflakeIssuer({
          redis: this.redis,
          firstLease: firstLeaseCheck(this.store), // as a worker: a new sequence's first lease is recorded in MongoDB
          ...(o.snowflakeClock && { clock: o.snowflakeClock }),
        })
      : undefined;
    if (snowflakes) this.#closers.unshift(() => snowflakes.close());
    const ownership = new Ownership(this.redis, o.topic ?? this.topic, o.events);
    const d = new Dispenser({
      allocator,
      ownership,
      recorder: new AnswerRecorder(this.redis, o.dedupeWindowMs ?? 60_000),
      issuance: { append: (records) => this.store.appendIssuance(records), worker },
      sequences: o.sequences ?? new SequenceCache(this.store, { ttlMs: 1000, clock, autoCreate: o.autoCreate ?? false }),
      heartbeatMs: 1000,
      stepBudgetMs: 5000,
      redisTimeoutMs: 2000,
      maxFormatted: o.maxFormatted ?? 100,
      clock,
      logger: pino({ level: "silent" }),
      gapless: new GaplessSource(this.store, worker, o.gaplessForecasts, o.serverNow),
      ...(snowflakes && { snowflakes }),
      ...(o.hooks && { hooks: o.hooks }),
      ...(o.kinds && { kinds: o.kinds }),
      ...(o.events && { events: o.events }),
    });
    ownership.assigned(o.partitions ?? [0]);
    return { d, allocator, ownership };
  }

  async close(): Promise<void> {
    for (const c of this.#closers) await c();
    await this.queries.dropDatabase();
    await this.store.close();
    this.redis.disconnect();
  }
}

export function request(sequence: string, count = 1, requestId: string = randomUUID(), more: Partial<IdRequest> = {}): IdRequest {
  return { requestId, sequence, count, replyTo: null, deadline: null, fields: {}, ...more };
}

/** Every number of the replies' ranges, in order. */
export function numbersOf(replies: IdReply[]): bigint[] {
  const out: bigint[] = [];
  for (const r of replies) for (const x of r.ranges) for (let n = x.first; n <= x.last; n++) out.push(n);
  return out;
}

/** A heartbeat of a worker that still owns its partitions. */
export const beat = async (): Promise<void> => {};
