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
import { errorReply, okReply, REPLY_SUBJECT } from "../protocol/reply.js";
import { parseRequest, RequestDecoder } from "../protocol/request.js";
import { replay } from "../recovery/replay.js";
import { RegistryClient } from "../registry/client.js";
import { SequenceCache } from "../sequences/cache.js";
import { defineSequence } from "../sequences/definition.js";
import { periodOf } from "../sequences/period.js";
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
  #producer: Producer | undefined;
  #consumer: Consumer | undefined;
  #replySchemaId = 0;
  readonly stats = { requests: 0, replies: 0, deadLetters: 0, numbers: 0 };

  constructor(d: WorkerDeps) {
    this.#c = d.config;
    this.#log = d.logger.child({ component: "worker" });
    this.#clock = d.clock ?? Date.now;
    const s = d.config.services;
    this.#kafka = createKafka({ brokers: s.kafkaBrokers, clientId: `idd-${d.config.workerId}`, logger: d.logger });
    this.#redis = defineScripts(new Redis(s.redisUrl, { maxRetriesPerRequest: 2, enableOfflineQueue: false }));
    this.#redis.on("error", (e) => this.#log.warn({ err: e.message }, "redis connection error"));
    this.#store = new Store(s.mongodbUrl);
    this.#registry = new RegistryClient(s.schemaRegistryUrl);
    this.#decoder = new RequestDecoder(this.#registry);
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
      try {
        const r = await replay(this.#redis, this.#store, {
          actor: `replay@${this.#c.workerId}`,
          progress: (l) => this.#log.info(`replay: ${l}`),
        });
        this.#log.info({ counters: r.counters, failed: r.failed.length, ms: r.ms }, "replay done");
      } finally {
        await this.#redis.del(lock);
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
    for (const p of lost) this.#seen.delete(p);
    const dropped = this.#allocator.dropSequences(sequences);
    this.#assigned = now;
    this.#log.info({ partitions, lost, droppedNumbers: dropped.toString() }, "partitions assigned");
  }

  async #handleBatch(batch: Batch, ctx: BatchContext): Promise<void> {
    const out: OutRecord[] = [];
    const seen = this.#seen.get(batch.partition) ?? new Set<string>();
    this.#seen.set(batch.partition, seen);
    let handled = 0;
    for (const record of batch.records) {
      if (!ctx.isRunning()) break; // rebalancing: the rest is answered by whoever owns the partition next
      handled++;
      const parsed = await parseRequest(record, this.#decoder, this.#c);
      this.stats.requests++;
      const now = this.#clock();
      if (!parsed.ok) {
        if (parsed.address)
          out.push(
            replyRecord(
              errorReply(parsed.requestId, parsed.sequence, parsed.error, now),
              parsed.address,
              record.key,
              parsed.format,
              this.#replySchemaId,
            ),
          );
        else {
          out.push(deadLetter(parsed, record, batch, this.#c.deadLetterTopic));
          this.stats.deadLetters++;
          this.#log.warn(
            { code: parsed.error.code, reason: parsed.error.message, offset: record.offset, partition: batch.partition },
            "request dead-lettered",
          );
        }
        continue;
      }
      const { request } = parsed;
      seen.add(request.sequence);
      let reply: ReturnType<typeof okReply>;
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
        this.stats.numbers += request.count;
      } catch (e) {
        const f = failureCode(e);
        reply = errorReply(request.requestId, request.sequence, new IddError(f.code as never, f.message), now);
        if (f.code === "UNAVAILABLE" || f.code === "INTERNAL") this.#log.warn({ sequence: request.sequence, ...f }, "request failed");
      }
      out.push(replyRecord(reply, parsed.address, record.key, parsed.format, this.#replySchemaId));
    }
    if (handled === 0) return;
    const { undeliverable } = await (this.#producer as Producer).send(out);
    if (undeliverable.length > 0) this.#log.warn({ topics: undeliverable }, "reply topics no longer exist: those replies were dropped");
    this.stats.replies += out.length;
    await ctx.commit((BigInt((batch.records[handled - 1] as { offset: string }).offset) + 1n).toString());
    await ctx.heartbeat();
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
