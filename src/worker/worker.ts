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
import { rateLimited } from "../log.js";
import { replySchemaText, requestSchemaText } from "../protocol/avro.js";
import { errorReply, type IdReply, okReply, REPLY_SUBJECT } from "../protocol/reply.js";
import { type Accepted, parseRequest, type Rejected, RequestDecoder } from "../protocol/request.js";
import { replay } from "../recovery/replay.js";
import { RegistryClient } from "../registry/client.js";
import { SequenceCache } from "../sequences/cache.js";
import { defineSequence, type SequenceDef } from "../sequences/definition.js";
import { periodOf } from "../sequences/period.js";
import { Breaker } from "../storage/breaker.js";
import { Store } from "../storage/store.js";
import {
  type Batch,
  type BatchContext,
  type Consumer,
  createKafka,
  type InRecord,
  type KafkaTransport,
  type OutRecord,
  type Producer,
} from "../transport/kafka.js";
import { ReplySender } from "../transport/reply-sender.js";
import { TopicMetadata } from "../transport/topic-metadata.js";
import { deadLetter, failureCode, replyRecord } from "./answer.js";
import { Ownership, type StoredAnswer } from "./ownership.js";

/** One request record of a step: what it parsed to, and the record that answers it once decided. */
interface Item {
  record: InRecord;
  parsed: Accepted | Rejected;
  out?: OutRecord;
}

/** An accepted request with numbers to issue. */
interface Pending extends Item {
  parsed: Accepted;
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
  readonly #creating = new Map<string, Promise<SequenceDef>>();
  readonly #allocator: Allocator;
  /** Sequences seen per partition: what to drop when the partition goes. */
  readonly #seen = new Map<number, Set<string>>();
  #assigned = new Set<number>();
  /** Owner-token calls while Redis is unreachable: fail fast, one probe a second. */
  readonly #redisBreaker = new Breaker({ what: "Redis", retryMs: 1000, isFailure: (e) => !(e instanceof IddError) });
  #producer: Producer | undefined;
  #sender: ReplySender | undefined;
  readonly #metadata: TopicMetadata;
  #consumer: Consumer | undefined;
  #replySchemaId = 0;
  readonly #ownership: Ownership;
  /**
   * What a retried batch (kafkajs hands the same batch again after an error) must not send again:
   * per partition, the offset before which every record was answered, and the offsets of the
   * current step already delivered.
   */
  readonly #doneBefore = new Map<number, number>();
  readonly #delivered = new Map<number, Set<string>>();
  readonly #limitedLog: ReturnType<typeof rateLimited>;
  readonly stats = {
    requests: 0,
    replies: 0,
    deadLetters: 0,
    /** Dead-letter records the broker refused too: logged, and the offset moves on. */
    lost: 0,
    numbers: 0,
    deduped: 0,
    expired: 0,
    /** Consumer crashes (an error escaped a batch): each one costs a rejoin. */
    crashes: 0,
  };

  constructor(d: WorkerDeps) {
    this.#c = d.config;
    this.#log = d.logger.child({ component: "worker" });
    this.#limitedLog = rateLimited(this.#log);
    this.#clock = d.clock ?? Date.now;
    const s = d.config.services;
    this.#kafka = createKafka({ brokers: s.kafkaBrokers, clientId: `idd-${d.config.workerId}`, logger: d.logger });
    // A Redis that hangs (paused, partitioned without a reset) must not hang batches past the
    // session: commands time out and the worker serves from blocks in memory (G3).
    this.#redis = defineScripts(
      new Redis(s.redisUrl, { maxRetriesPerRequest: 2, enableOfflineQueue: false, commandTimeout: d.config.redisTimeoutMs }),
    );
    this.#redis.on("error", (e) => this.#log.warn({ err: e.message }, "redis connection error"));
    this.#metadata = new TopicMetadata(() => this.#kafka.topicPartitions());
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
    await this.#redisReady();
    await this.#checkRedis();
    await this.#registry.register(`${c.requestTopic}-value`, requestSchemaText);
    this.#replySchemaId = await this.#registry.register(REPLY_SUBJECT, replySchemaText);
    await this.#kafka.ensureTopics([
      { topic: c.requestTopic, partitions: c.requestPartitions },
      { topic: c.deadLetterTopic, partitions: 1 },
    ]);
    this.#producer = await this.#kafka.producer();
    this.#sender = new ReplySender(this.#producer, this.#metadata, {
      maxRecords: c.sendMaxRecords,
      maxBytes: c.sendMaxBytes,
      retryMs: c.replyRetryMs,
      concurrency: c.sendConcurrency,
    });
    this.#consumer = await this.#kafka.consumer({
      groupId: c.groupId,
      topic: c.requestTopic,
      sessionTimeoutMs: c.sessionTimeoutMs,
      heartbeatMs: c.heartbeatMs,
      maxBytesPerPartition: c.fetchMaxBytesPerPartition,
      maxBytes: c.fetchMaxBytesPerPartition * c.requestPartitions,
      onBatch: (b, ctx) => this.#handleBatch(b, ctx),
      onAssigned: (p) => this.#onAssigned(p),
      onCrash: (e) => {
        this.stats.crashes++;
        this.#log.error({ err: e.message }, "Kafka consumer crashed");
      },
    });
    this.#log.info({ topic: c.requestTopic, group: c.groupId }, "worker started");
  }

  /**
   * Commands do not queue while Redis is unconnected (they fail fast instead, G3), so the first ones
   * wait for the connection, up to a bound: a Redis that is down at start fails them as usual.
   */
  async #redisReady(): Promise<void> {
    if (this.#redis.status === "ready") return;
    const ms = Math.max(5000, 5 * this.#c.redisTimeoutMs);
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#redis.off("ready", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#redis.once("ready", done);
    });
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
    this.#log.info({ ...this.stats, store: this.#store.stats, redisCalls: this.#allocator.stats.redisCalls }, "worker stopped");
  }

  #onAssigned(partitions: number[]): void {
    const now = new Set(partitions);
    const lost = [...this.#assigned].filter((p) => !now.has(p));
    const sequences = lost.flatMap((p) => [...(this.#seen.get(p) ?? [])]);
    for (const p of lost) {
      this.#seen.delete(p);
      this.#delivered.delete(p);
      this.#doneBefore.delete(p);
      this.#ownership.forget(p);
    }
    const dropped = this.#allocator.dropSequences(sequences);
    this.#assigned = now;
    this.#log.info({ partitions, lost, droppedNumbers: dropped.toString() }, "partitions assigned");
  }

  /** A fetched batch, in steps of at most `stepRecords` records, each answered and committed. */
  async #handleBatch(batch: Batch, ctx: BatchContext): Promise<void> {
    const n = this.#c.stepRecords;
    for (let from = 0; from < batch.records.length; from += n) {
      if (!ctx.isRunning()) return; // rebalancing: the rest is answered by whoever owns the partition next
      await this.#step(batch, batch.records.slice(from, from + n), ctx);
    }
  }

  /**
   * One step: parse, check reply addresses, answer, deliver (dead-lettering what cannot be
   * delivered), commit. Records delivered by an earlier try of the same batch are not sent again.
   */
  async #step(batch: Batch, records: InRecord[], ctx: BatchContext): Promise<void> {
    const { partition } = batch;
    const delivered = this.#delivered.get(partition) ?? new Set<string>();
    this.#delivered.set(partition, delivered);
    const seen = this.#seen.get(partition) ?? new Set<string>();
    this.#seen.set(partition, seen);
    const doneBefore = this.#doneBefore.get(partition) ?? -1;
    const todo = records.filter((r) => Number(r.offset) >= doneBefore && !delivered.has(r.offset));
    const items = await this.#parse(todo);
    this.stats.requests += items.length;
    const pending: Pending[] = [];
    for (const item of items) {
      if (item.parsed.ok) {
        seen.add(item.parsed.request.sequence);
        pending.push(item as Pending);
      } else if (item.parsed.address) {
        const p = item.parsed;
        const reply = errorReply(p.requestId, p.sequence, p.error, this.#clock());
        item.out = replyRecord(reply, p.address as NonNullable<Rejected["address"]>, item.record.key, p.format, this.#replySchemaId);
      }
    }
    if (pending.length > 0) {
      try {
        await this.#answer(partition, pending, seen, ctx);
      } catch (e) {
        if (!isIddError(e, "WORKER_FENCED")) throw e;
        // Another worker took the partition's token: either this worker lost the partition (then the
        // heartbeat fails and nothing is published) or it took the token back after a Redis loss.
        this.#log.warn({ partition }, "fenced: a newer owner holds this partition's token");
        await ctx.heartbeat();
        await this.#answer(partition, pending, seen, ctx);
      }
    }
    await this.#deliver(batch, items, delivered, ctx);
    const last = records.at(-1) as InRecord;
    ctx.commit(String(Number(last.offset) + 1));
    this.#doneBefore.set(partition, Number(last.offset) + 1);
    delivered.clear();
    await ctx.heartbeat();
  }

  /** Parses records (loading unknown schema ids once per step), then checks that reply addresses exist. */
  async #parse(records: InRecord[]): Promise<Item[]> {
    const fetched = Date.now(); // every reply topic these records name existed before now
    const unknown = records.map((r) => this.#decoder.unknownSchemaId(r.value)).filter((id) => id !== undefined);
    if (unknown.length > 0) await this.#decoder.load(unknown);
    const items: Item[] = records.map((record) => ({ record, parsed: parseRequest(record, this.#decoder, this.#c) }));
    const addressed = items.flatMap((i) => (i.parsed.address ? [i.parsed.address] : []));
    if (addressed.length === 0) return items;
    const counts = await this.#metadata.partitions(addressed, fetched);
    for (const item of items) {
      const a = item.parsed.address;
      if (!a) continue;
      const n = counts.get(a.topic);
      const error =
        n === undefined
          ? new IddError("REPLY_TOPIC_UNKNOWN", `reply topic "${a.topic}" does not exist`)
          : a.partition !== undefined && a.partition >= n
            ? new IddError("REPLY_PARTITION_INVALID", `reply topic "${a.topic}" has ${n} partitions; ${a.partition} is not one`)
            : undefined;
      if (!error) continue;
      const p = item.parsed;
      const who = p.ok ? p.request : p;
      item.parsed = { ok: false, error, format: p.format, requestId: who.requestId, sequence: who.sequence };
    }
    return items;
  }

  /**
   * Sends every item's reply, or its dead-letter record when it has no deliverable address or the
   * broker refused its reply. Throws only when the dead-letter topic cannot be written either
   * (Kafka down): the batch is tried again, and what was delivered meanwhile is not sent twice.
   */
  async #deliver(batch: Batch, items: Item[], delivered: Set<string>, ctx: BatchContext): Promise<void> {
    const sender = this.#sender as ReplySender;
    const beat = () => ctx.heartbeat();
    const dlq = (item: Item, error: { code: string; message: string }, minimal = false) =>
      deadLetter(error, item.record, batch, this.#c.deadLetterTopic, minimal);
    const toDlq: { item: Item; error: { code: string; message: string } }[] = [];
    const replies = items.filter((i) => i.out);
    const results = await sender.deliver(
      replies.map((i) => i.out as OutRecord),
      beat,
    );
    replies.forEach((item, k) => {
      const f = results[k];
      if (!f) {
        delivered.add(item.record.offset);
        this.stats.replies++;
      } else toDlq.push({ item, error: { code: f.code, message: f.reason } });
    });
    for (const item of items) if (!item.out && !item.parsed.ok) toDlq.push({ item, error: item.parsed.error });
    if (toDlq.length === 0) return;
    for (const { item, error } of toDlq) {
      this.#limitedLog(
        "warn",
        { code: error.code, reason: error.message.slice(0, 300), partition: batch.partition, offset: item.record.offset },
        "request dead-lettered",
      );
    }
    let left = toDlq;
    for (const minimal of [false, true]) {
      const r = await sender.deliver(
        left.map(({ item, error }) => dlq(item, error, minimal)),
        beat,
      );
      left.forEach(({ item }, k) => {
        if (r[k]) return;
        delivered.add(item.record.offset);
        this.stats.deadLetters++;
      });
      const failed = r.find((f) => f?.code === "REPLY_FAILED");
      if (failed) throw new IddError("UNAVAILABLE", `the dead-letter topic cannot be written: ${failed.reason}`, { retriable: true });
      left = left.filter((_, k) => r[k]);
      if (left.length === 0) return;
    }
    for (const { item, error } of left) {
      this.stats.lost++;
      delivered.add(item.record.offset);
      this.#limitedLog(
        "error",
        { code: error.code, partition: batch.partition, offset: item.record.offset, dlq: this.#c.deadLetterTopic },
        "the dead-letter topic refused the record too: request lost",
      );
    }
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
            this.stats.expired++;
            throw new IddError(
              "DEADLINE_EXCEEDED",
              `deadline ${request.deadline} passed ${now - Number(request.deadline)} ms before idd could answer`,
            );
          }
          // Without awaiting when the definition is cached and the blocks in memory suffice.
          const def = this.#sequences.peek(request.sequence) ?? (await this.#sequence(request.sequence));
          const period = periodOf(def, now);
          const counter = this.#allocator.counter(def, period);
          const ranges = counter.takeNow(request.count) ?? (await counter.take(request.count));
          reply = okReply(request.requestId, request.sequence, period, ranges, now);
          if (request.requestId !== "") issued.push({ p, answer: { period, ranges } });
          this.stats.numbers += request.count;
        } catch (e) {
          const f = failureCode(e);
          reply = errorReply(request.requestId, request.sequence, new IddError(f.code as never, f.message), now);
          if (f.code === "UNAVAILABLE" || f.code === "INTERNAL")
            this.#limitedLog("warn", { sequence: request.sequence, ...f }, "request failed");
        }
      }
      p.out = replyRecord(reply, p.parsed.address, p.record.key, p.parsed.format, this.#replySchemaId);
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
      p.out = replyRecord(reply, p.parsed.address, p.record.key, p.parsed.format, this.#replySchemaId);
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

  async #sequence(name: string): Promise<SequenceDef> {
    const def = await this.#sequences.get(name);
    if (def) return def;
    if (!this.#c.autoCreateSequences) throw new IddError("UNKNOWN_SEQUENCE", `no sequence named "${name}"`);
    // One creation per name at a time: the requests of a batch for a new sequence share it.
    let creating = this.#creating.get(name);
    if (!creating) {
      creating = (async () => {
        const created = defineSequence({ name }, new Date(this.#clock()));
        await this.#store.createSequence(created).catch((e: unknown) => {
          if (!(e instanceof IddError && e.code === "SEQUENCE_EXISTS")) throw e;
        });
        const stored = (await this.#store.getSequence(name)) ?? created;
        this.#sequences.remember(stored);
        return stored;
      })().finally(() => this.#creating.delete(name));
      this.#creating.set(name, creating);
    }
    return creating;
  }
}
