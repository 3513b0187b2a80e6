/**
 * A worker: one member of the consumer group on the request topic. Per partition, records are
 * handled in offset order; each batch's replies are produced together and acknowledged before the
 * batch's offsets are committed. Losing a partition drops the unissued blocks of its sequences (I3).
 */
import { Redis } from "ioredis";
import type { Logger } from "pino";
import { Allocator } from "../allocation/allocator.js";
import { MARKER_KEY } from "../allocation/keys.js";
import { defineScripts } from "../allocation/scripts.js";
import type { Config } from "../config/config.js";
import { IddError, isIddError } from "../errors.js";
import { replySchemaText, requestSchemaText } from "../protocol/avro.js";
import { errorReply, type IdReply, okReply, REPLY_SUBJECT } from "../protocol/reply.js";
import { type Accepted, parseRequest, RequestDecoder } from "../protocol/request.js";
import { replay } from "../recovery/replay.js";
import { RegistryClient } from "../registry/client.js";
import { SequenceCache } from "../sequences/cache.js";
import { defineSequence } from "../sequences/definition.js";
import { periodOf } from "../sequences/period.js";
import { Breaker } from "../storage/breaker.js";
import { Store } from "../storage/store.js";
import {
  type Batch,
  type BatchContext,
  type Consumer,
  createKafka,
  type KafkaTransport,
  type OutRecord,
  type Producer,
} from "../transport/kafka.js";
import { deadLetter, failureCode, replyRecord } from "./answer.js";
import { Ownership, type StoredAnswer } from "./ownership.js";

/** A request with numbers to issue, and the record answering it once decided. */
interface Pending {
  parsed: Accepted;
  key: Buffer | null;
  out?: OutRecord;
}

export interface WorkerDeps {
  config: Config;
  logger: Logger;
  clock?: () => number;
}

export class Worker {
  readonly #c: Config;
  readonly #log: Logger;
  readonly #clock: () => number;
  readonly #kafka: KafkaTransport;
  readonly #redis: Redis;
  readonly #store: Store;
  readonly #registry: RegistryClient;
  readonly #decoder: RequestDecoder;
  readonly #sequences: SequenceCache;
  readonly #allocator: Allocator;
  /** Sequences seen per partition: what to drop when the partition goes. */
  readonly #seen = new Map<number, Set<string>>();
  #assigned = new Set<number>();
  /** Owner-token calls while Redis is unreachable: fail fast, one probe a second. */
  readonly #redisBreaker = new Breaker({ what: "Redis", retryMs: 1000, isFailure: (e) => !(e instanceof IddError) });
  #producer: Producer | undefined;
  #consumer: Consumer | undefined;
  #replySchemaId = 0;
  readonly #ownership: Ownership;
  readonly stats = { requests: 0, replies: 0, deadLetters: 0, numbers: 0, deduped: 0 };

  constructor(d: WorkerDeps) {
    this.#c = d.config;
    this.#log = d.logger.child({ component: "worker" });
    this.#clock = d.clock ?? Date.now;
    const s = d.config.services;
    this.#kafka = createKafka({ brokers: s.kafkaBrokers, clientId: `idd-${d.config.workerId}`, logger: d.logger });
    // A Redis that hangs (paused, partitioned without a reset) must not hang batches past the
    // session: commands time out and the worker serves from blocks in memory (G3).
    this.#redis = defineScripts(
      new Redis(s.redisUrl, { maxRetriesPerRequest: 2, enableOfflineQueue: false, commandTimeout: d.config.redisTimeoutMs }),
    );
    this.#redis.on("error", (e) => this.#log.warn({ err: e.message }, "redis connection error"));
    this.#store = new Store(s.mongodbUrl);
    this.#registry = new RegistryClient(s.schemaRegistryUrl);
    this.#decoder = new RequestDecoder(this.#registry);
    this.#ownership = new Ownership(this.#redis, d.config.requestTopic, d.config.dedupeWindowMs);
    this.#sequences = new SequenceCache(this.#store, { ttlMs: d.config.sequenceCacheMs, clock: this.#clock });
    this.#allocator = new Allocator({
      redis: this.#redis,
      store: this.#store,
      worker: d.config.workerId,
      config: d.config,
      clock: this.#clock,
      flushMs: d.config.flushMs,
      sampleMs: d.config.sampleMs,
      onLogError: (what, e, buffered) =>
        this.#log.warn({ err: (e as Error).message, buffered }, `appending ${what} to MongoDB failed; kept for the next flush`),
    });
  }

  get allocator(): Allocator {
    return this.#allocator;
  }

  async start(): Promise<void> {
    const c = this.#c;
    await this.#store.ensureIndexes();
    await this.#checkRedis();
    await this.#registry.register(`${c.requestTopic}-value`, requestSchemaText);
    this.#replySchemaId = await this.#registry.register(REPLY_SUBJECT, replySchemaText);
    await this.#kafka.ensureTopics([
      { topic: c.requestTopic, partitions: c.requestPartitions },
      { topic: c.deadLetterTopic, partitions: 1 },
    ]);
    this.#producer = await this.#kafka.producer();
    this.#consumer = await this.#kafka.consumer({
      groupId: c.groupId,
      topic: c.requestTopic,
      sessionTimeoutMs: c.sessionTimeoutMs,
      heartbeatMs: c.heartbeatMs,
      onBatch: (b, ctx) => this.#handleBatch(b, ctx),
      onAssigned: (p) => this.#onAssigned(p),
    });
    this.#log.info({ topic: c.requestTopic, group: c.groupId }, "worker started");
  }

  /**
   * Redis lost its state (no marker while MongoDB holds reservations): with IDD_REPLAY_ON_START one
   * worker replays (the others wait for it); otherwise requests fail closed with REDIS_STATE_LOST
   * until an operator runs `idd replay`.
   */
  async #checkRedis(): Promise<void> {
    try {
      await this.#allocator.redisState.refresh();
      return;
    } catch (e) {
      if (!isIddError(e, "REDIS_STATE_LOST")) throw e;
      if (!this.#c.replayOnStart) {
        this.#log.error({ code: e.code }, `${e.message}; until then requests are answered with REDIS_STATE_LOST`);
        return;
      }
    }
    const lock = `${MARKER_KEY}:replaying`;
    if ((await this.#redis.set(lock, this.#c.workerId, "PX", 300_000, "NX")) === "OK") {
      this.#log.warn("Redis lost its state: replaying from MongoDB (IDD_REPLAY_ON_START)");
      // A client of its own: replay's batches may take longer than request-path commands may.
      const redis = defineScripts(new Redis(this.#c.services.redisUrl, { maxRetriesPerRequest: 2 }));
      try {
        const r = await replay(redis, this.#store, {
          actor: `replay@${this.#c.workerId}`,
          progress: (l) => this.#log.info(`replay: ${l}`),
        });
        this.#log.info({ counters: r.counters, failed: r.failed.length, ms: r.ms }, "replay done");
      } finally {
        await redis.del(lock);
        redis.disconnect();
      }
    } else {
      this.#log.info("another worker is replaying; waiting for it");
      while ((await this.#redis.exists(lock)) === 1) await new Promise((r) => setTimeout(r, 500));
    }
    await this.#allocator.redisState
      .refresh()
      .catch((e: unknown) => this.#log.error({ err: (e as Error).message }, "Redis state still lost"));
  }

  /** SIGTERM path: stop fetching, finish and commit the batch in flight, leave the group, flush logs. */
  async stop(): Promise<void> {
    await this.#consumer?.close();
    await this.#allocator.close();
    await this.#producer?.close();
    this.#redis.disconnect();
    await this.#store.close();
    this.#log.info(this.stats, "worker stopped");
  }

  #onAssigned(partitions: number[]): void {
    const now = new Set(partitions);
    const lost = [...this.#assigned].filter((p) => !now.has(p));
    const sequences = lost.flatMap((p) => [...(this.#seen.get(p) ?? [])]);
    for (const p of lost) {
      this.#seen.delete(p);
      this.#ownership.forget(p);
    }
    const dropped = this.#allocator.dropSequences(sequences);
    this.#assigned = now;
    this.#log.info({ partitions, lost, droppedNumbers: dropped.toString() }, "partitions assigned");
  }

  async #handleBatch(batch: Batch, ctx: BatchContext): Promise<void> {
    const seen = this.#seen.get(batch.partition) ?? new Set<string>();
    this.#seen.set(batch.partition, seen);
    // Parse everything first; requests with numbers to issue are answered together below.
    const slots: { out?: OutRecord; pending?: Pending }[] = [];
    for (const record of batch.records) {
      if (!ctx.isRunning()) break; // rebalancing: the rest is answered by whoever owns the partition next
      const parsed = await parseRequest(record, this.#decoder, this.#c);
      this.stats.requests++;
      if (parsed.ok) {
        seen.add(parsed.request.sequence);
        slots.push({ pending: { parsed, key: record.key } });
      } else if (parsed.address) {
        const reply = errorReply(parsed.requestId, parsed.sequence, parsed.error, this.#clock());
        slots.push({ out: replyRecord(reply, parsed.address, record.key, parsed.format, this.#replySchemaId) });
      } else {
        slots.push({ out: deadLetter(parsed, record, batch, this.#c.deadLetterTopic) });
        this.stats.deadLetters++;
        this.#log.warn(
          { code: parsed.error.code, reason: parsed.error.message, offset: record.offset, partition: batch.partition },
          "request dead-lettered",
        );
      }
    }
    if (slots.length === 0) return;
    const pending = slots.flatMap((s) => (s.pending ? [s.pending] : []));
    try {
      await this.#answer(batch.partition, pending, seen, ctx);
    } catch (e) {
      if (!isIddError(e, "WORKER_FENCED")) throw e;
      // Another worker took the partition's token: either this worker lost the partition (then the
      // heartbeat fails and nothing is published) or it took the token back after a Redis loss.
      this.#log.warn({ partition: batch.partition }, "fenced: a newer owner holds this partition's token");
      await ctx.heartbeat();
      await this.#answer(batch.partition, pending, seen, ctx);
    }
    const out = slots.map((s) => s.out ?? (s.pending?.out as OutRecord));
    const { undeliverable } = await (this.#producer as Producer).send(out);
    if (undeliverable.length > 0) this.#log.warn({ topics: undeliverable }, "reply topics no longer exist: those replies were dropped");
    this.stats.replies += out.length;
    await ctx.commit((BigInt((batch.records[slots.length - 1] as { offset: string }).offset) + 1n).toString());
    await ctx.heartbeat();
  }

  /**
   * Issues numbers for one partition's requests and records the answers under the partition's owner
   * token before anything is published (G2); a requestId answered before gets that answer (G6).
   * While Redis is unreachable, numbers still come from blocks in memory (G3), unrecorded. A batch
   * that waits on Redis or MongoDB keeps heartbeating, so it does not outlive the consumer session.
   */
  async #answer(partition: number, pending: Pending[], seen: Set<string>, ctx: BatchContext): Promise<void> {
    const t = await this.#owned(partition, () => this.#ownership.token(partition));
    if (t?.taken) this.#allocator.dropSequences(seen); // only blocks claimed from now on are issued
    const token = t?.token;
    const keyed = pending.filter((p) => p.parsed.request.requestId !== "");
    const earlier =
      token === undefined ? [] : ((await this.#owned(partition, () => this.#ownership.lookup(keyed.map((p) => p.parsed.request)))) ?? []);
    const known = new Map(keyed.map((p, i) => [p, earlier[i]]));
    const issued: { p: Pending; answer: StoredAnswer }[] = [];
    let beatAt = this.#clock();
    for (const p of pending) {
      const { request } = p.parsed;
      const now = this.#clock();
      if (now - beatAt >= this.#c.heartbeatMs) {
        await ctx.heartbeat();
        beatAt = now;
      }
      let reply: IdReply;
      const before = known.get(p);
      if (before) {
        reply = okReply(request.requestId, request.sequence, before.period, before.ranges, now);
        this.stats.deduped++;
      } else {
        try {
          if (request.deadline !== null && BigInt(now) > request.deadline) {
            throw new IddError(
              "DEADLINE_EXCEEDED",
              `deadline ${request.deadline} passed ${now - Number(request.deadline)} ms before idd could answer`,
            );
          }
          const def = await this.#sequence(request.sequence);
          const period = periodOf(def, now);
          const ranges = await this.#allocator.counter(def, period).take(request.count);
          reply = okReply(request.requestId, request.sequence, period, ranges, now);
          if (request.requestId !== "") issued.push({ p, answer: { period, ranges } });
          this.stats.numbers += request.count;
        } catch (e) {
          const f = failureCode(e);
          reply = errorReply(request.requestId, request.sequence, new IddError(f.code as never, f.message), now);
          if (f.code === "UNAVAILABLE" || f.code === "INTERNAL") this.#log.warn({ sequence: request.sequence, ...f }, "request failed");
        }
      }
      p.out = replyRecord(reply, p.parsed.address, p.key, p.parsed.format, this.#replySchemaId);
    }
    if (token === undefined || issued.length === 0) return;
    let recorded: (StoredAnswer | undefined)[] | undefined;
    try {
      recorded = await this.#owned(partition, () =>
        this.#ownership.record(
          partition,
          token,
          issued.map((x) => ({ sequence: x.p.parsed.request.sequence, requestId: x.p.parsed.request.requestId, answer: x.answer })),
        ),
      );
    } catch (e) {
      if (isIddError(e, "WORKER_FENCED")) this.#allocator.dropSequences(seen);
      throw e;
    }
    if (!recorded) return; // Redis unreachable: published unrecorded
    recorded.forEach((r, i) => {
      if (!r) return;
      // Answered meanwhile by another worker (a retry raced its first attempt): send that answer.
      const { p } = issued[i] as { p: Pending };
      const { request } = p.parsed;
      const reply = okReply(request.requestId, request.sequence, r.period, r.ranges, this.#clock());
      p.out = replyRecord(reply, p.parsed.address, p.key, p.parsed.format, this.#replySchemaId);
      this.stats.deduped++;
    });
  }

  /**
   * An owner-token call (take, look up, record). Undefined when Redis is unreachable: then the batch
   * is answered from blocks in memory, unrecorded, and for a second no batch waits for Redis again
   * (one probes it). WORKER_FENCED is thrown.
   */
  async #owned<T>(partition: number, call: () => Promise<T>): Promise<T | undefined> {
    const wasDown = this.#redisBreaker.open;
    try {
      return await this.#redisBreaker.run(call);
    } catch (e) {
      if (!isIddError(e, "UNAVAILABLE")) throw e;
      if (!wasDown) this.#log.warn({ err: e.message, partition }, "Redis unreachable: answering from blocks in memory, unrecorded");
      return undefined;
    }
  }

  async #sequence(name: string) {
    const def = await this.#sequences.get(name);
    if (def) return def;
    if (!this.#c.autoCreateSequences) throw new IddError("UNKNOWN_SEQUENCE", `no sequence named "${name}"`);
    const created = defineSequence({ name }, new Date(this.#clock()));
    await this.#store.createSequence(created).catch((e: unknown) => {
      if (!(e instanceof IddError && e.code === "SEQUENCE_EXISTS")) throw e;
    });
    return (await this.#store.getSequence(name)) ?? created;
  }
}
