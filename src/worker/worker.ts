/**
 * A worker: one member of the consumer group on the request topic. Per partition, records are
 * handled in offset order; each batch's replies are produced together and acknowledged before the
 * batch's offsets are committed. Losing a partition drops the unissued blocks of its sequences (I3).
 */
import type { Logger } from "pino";
import type { Allocator } from "../allocation/allocator.js";
import type { Config } from "../config/config.js";
import { IddError } from "../core/errors.js";
import { rateLimited } from "../core/log.js";
import { loadHooks } from "../hooks/load.js";
import type { Dispenser } from "../issuing/dispenser.js";
import { type OpsServer, startOpsServer } from "../ops/http.js";
import { createMetrics } from "../ops/metrics.js";
import { Readiness } from "../ops/readiness.js";
import { StatusModel } from "../ops/status.js";
import { replySchemaText, requestSchemaText } from "../protocol/avro.js";
import { REPLY_SUBJECT } from "../protocol/reply.js";
import { parseRequest } from "../protocol/request.js";
import { ensureRedisState } from "../recovery/replay-on-start.js";
import { redisConnected } from "../redis/client.js";
import type { Batch, BatchContext, Consumer, InRecord, Producer } from "../transport/kafka/index.js";
import { ReplySender } from "../transport/reply-sender.js";
import { Delivery } from "./delivery.js";
import { type Item, type Pending, replyError } from "./item.js";
import { PartitionCount } from "./partition-count.js";
import { type WorkerParts, workerParts } from "./parts.js";
import { Router } from "./router.js";

export interface WorkerDeps {
  config: Config;
  logger: Logger;
  clock?: () => number;
}

export class Worker {
  readonly #c: Config;
  readonly #log: Logger;
  readonly #clock: () => number;
  readonly #p: WorkerParts;
  readonly #dispenser: Dispenser;
  #producer: Producer | undefined;
  /** Built at start, once the reply schema id and the partition count are known. */
  #router: Router | undefined;
  #delivery: Delivery | undefined;
  #consumer: Consumer | undefined;
  #replySchemaId = 0;
  /** The request topic's partition count requests are routed by (set at start). */
  #partitions: PartitionCount | undefined;
  #partitionsTimer: NodeJS.Timeout | undefined;
  #ops: { server: OpsServer; readiness: Readiness } | undefined;
  /**
   * What a retried batch (kafkajs hands the same batch again after an error) must not send again:
   * per partition, the offset before which every record was answered, and the offsets of the
   * current step already delivered.
   */
  readonly #doneBefore = new Map<number, number>();
  readonly #delivered = new Map<number, Set<string>>();
  readonly #limitedLog: ReturnType<typeof rateLimited>;
  readonly #stats = {
    requests: 0,
    replies: 0,
    deadLetters: 0,
    /** Dead-letter records the broker refused too: logged, and the offset moves on. */
    lost: 0,
    /** Consumer crashes (an error escaped a batch): each one costs a rejoin. */
    crashes: 0,
    /** Requests forwarded to their sequence's home partition. */
    forwarded: 0,
  };

  constructor(d: WorkerDeps) {
    this.#c = d.config;
    this.#log = d.logger.child({ component: "worker" });
    this.#limitedLog = rateLimited(this.#log);
    this.#clock = d.clock ?? Date.now;
    this.#p = workerParts(d.config, d.logger, this.#clock);
    this.#dispenser = this.#p.dispenser;
  }

  get stats() {
    return { ...this.#stats, ...this.#dispenser.stats };
  }

  get allocator(): Allocator {
    return this.#p.allocator;
  }

  async start(): Promise<void> {
    const c = this.#c;
    const p = this.#p;
    if (c.httpPort > 0) await this.#startOps();
    await p.store.ensureIndexes();
    await this.#redisReady();
    await ensureRedisState({
      redis: p.redis,
      redisUrl: c.services.redisUrl,
      ...(c.services.security.redisCa && { redisCa: c.services.security.redisCa }),
      store: p.store,
      state: p.allocator.redisState,
      replayOnStart: c.replayOnStart,
      workerId: c.workerId,
      logger: this.#log,
    });
    p.hooks.use(
      await loadHooks(c.hooks, { worker: c.workerId, logger: this.#log, store: p.store, env: process.env }, { rateLogMs: c.rateLogMs }),
    );
    if (p.hooks.active) this.#log.info({ hooks: p.hooks.names }, "issuance hooks loaded");
    await p.registry.register(`${c.requestTopic}-value`, requestSchemaText);
    this.#replySchemaId = await p.registry.register(REPLY_SUBJECT, replySchemaText);
    await p.kafka.ensureTopics([
      { topic: c.requestTopic, partitions: c.requestPartitions },
      { topic: c.deadLetterTopic, partitions: 1 },
    ]);
    await this.#routeByPartitions();
    this.#producer = await p.kafka.producer();
    const sender = new ReplySender(this.#producer, p.metadata, {
      maxRecords: c.sendMaxRecords,
      maxBytes: c.sendMaxBytes,
      retryMs: c.replyRetryMs,
      concurrency: c.sendConcurrency,
    });
    this.#delivery = new Delivery({
      sender,
      metadata: p.metadata,
      requestTopic: c.requestTopic,
      deadLetterTopic: c.deadLetterTopic,
      events: p.events,
      stats: this.#stats,
      limitedLog: this.#limitedLog,
    });
    this.#router = new Router({
      requestTopic: c.requestTopic,
      count: this.#partitions as PartitionCount,
      dispenser: this.#dispenser,
      recorder: p.recorder,
      replySchemaId: this.#replySchemaId,
      clock: this.#clock,
      log: this.#log,
    });
    this.#consumer = await p.kafka.consumer({
      groupId: c.groupId,
      topic: c.requestTopic,
      sessionTimeoutMs: c.sessionTimeoutMs,
      heartbeatMs: c.heartbeatMs,
      maxBytesPerPartition: c.fetchMaxBytesPerPartition,
      maxBytes: c.fetchMaxBytesPerPartition * c.requestPartitions,
      metadataMaxAgeMs: c.topicRefreshMs,
      onBatch: (b, ctx) => this.#handleBatch(b, ctx),
      onAssigned: (p) => this.#onAssigned(p),
      onCrash: (e) => {
        this.#stats.crashes++;
        p.events.emit("worker.consumer", { running: false });
        this.#log.error({ err: e.message }, "Kafka consumer crashed");
      },
    });
    p.events.emit("worker.consumer", { running: true });
    this.#ops?.readiness.started();
    this.#log.info({ topic: c.requestTopic, group: c.groupId }, "worker started");
  }

  /**
   * Learns the request topic's partition count (the brokers', or a larger one some owner routed by,
   * from Redis), routes by it, and follows its growth: asked every IDD_TOPIC_REFRESH_MS and when a
   * record shows it stale. A change re-homes sequences: the dispenser drops what it held.
   */
  async #routeByPartitions(): Promise<void> {
    const c = this.#c;
    const p = this.#p;
    const fromBrokers = (await p.kafka.partitionCount(c.requestTopic)) ?? c.requestPartitions;
    const count = new PartitionCount(Math.max(fromBrokers, await p.recorder.partitionsInForce()), {
      fetch: () => p.kafka.partitionCount(c.requestTopic),
    });
    this.#dispenser.routeBy(count.value);
    count.onChange((now, was) => {
      p.metadata.invalidate(); // forwards to the new partitions must not be judged on an older snapshot
      const dropped = this.#dispenser.routeBy(now);
      p.events.emit("worker.partitions", { partitions: now, was, droppedNumbers: dropped });
      this.#log.info(
        { topic: c.requestTopic, partitions: now, was, droppedNumbers: dropped.toString() },
        "the request topic has more partitions: sequences re-homed, blocks dropped",
      );
    });
    this.#partitions = count;
    this.#partitionsTimer = setInterval(() => void count.refresh(), c.topicRefreshMs);
    this.#partitionsTimer.unref();
    this.#log.info({ topic: c.requestTopic, partitions: count.value }, "routing by the request topic's partition count");
  }

  /**
   * Commands do not queue while Redis is unconnected (they fail fast instead, G3), so the first ones
   * wait for the connection, up to a bound: a Redis that is down at start fails them as usual, and
   * one that refuses the login stops the start (REDIS_AUTH_FAILED).
   */
  #redisReady(): Promise<void> {
    return redisConnected(this.#p.redis, this.#c.services.redisUrl, Math.max(5000, 5 * this.#c.redisTimeoutMs));
  }

  /** /status, /status.json, /metrics, /healthz and /readyz on IDD_HTTP_HOST:IDD_HTTP_PORT (src/ops/). */
  async #startOps(): Promise<void> {
    const c = this.#c;
    const p = this.#p;
    const readiness = new Readiness({
      probes: [
        { name: "redis", ping: () => p.redis.ping() },
        { name: "mongodb", ping: () => p.store.ping() },
      ],
      budgetMs: c.readyOutageBudgetMs,
      timeoutMs: c.redisTimeoutMs,
      events: p.events,
    });
    const metrics = createMetrics({
      events: p.events,
      counters: () => p.allocator.snapshots(),
      roundTrips: () => ({ redis: p.allocator.stats.redisCalls, mongodb: p.store.stats.reads + p.store.stats.writes }),
      maxSequences: c.metricsMaxSequences,
    });
    const status = new StatusModel({
      events: p.events,
      workerId: c.workerId,
      groupId: c.groupId,
      requestTopic: c.requestTopic,
      requestPartitions: () => this.#partitions?.value ?? c.requestPartitions,
      counters: () => p.allocator.snapshots(),
      readiness: () => readiness.state(),
      pool: (group, topic) => p.kafka.groupPartitions(group, topic),
      maxSequences: c.metricsMaxSequences,
    });
    const server = await startOpsServer({
      host: c.httpHost,
      port: c.httpPort,
      metrics,
      readiness,
      status: () => status.snapshot(),
      ...(c.httpToken && { token: c.httpToken }),
    });
    this.#ops = { server, readiness };
    this.#log.info({ url: `http://${c.httpHost}:${server.port}/status` }, "serving /status, /status.json, /metrics, /healthz, /readyz");
  }

  /** SIGTERM path: stop fetching, finish and commit the batch in flight, leave the group, flush logs. */
  async stop(): Promise<void> {
    const p = this.#p;
    this.#ops?.readiness.stop();
    clearInterval(this.#partitionsTimer);
    p.events.emit("worker.consumer", { running: false });
    await this.#consumer?.close();
    await p.hooks.close();
    await p.snowflakes.close();
    await p.allocator.close();
    await this.#producer?.close();
    await p.kafka.close();
    p.redis.disconnect();
    await p.store.close();
    await this.#ops?.server.close();
    this.#log.info(
      { ...this.stats, hooks: p.hooks.stats, store: p.store.stats, redisCalls: p.allocator.stats.redisCalls },
      "worker stopped",
    );
  }

  #onAssigned(partitions: number[]): void {
    const { lost, dropped } = this.#dispenser.assigned(partitions);
    this.#p.events.emit("worker.assigned", { partitions, lost, droppedNumbers: dropped });
    this.#p.events.emit("worker.consumer", { running: true });
    for (const p of lost) {
      this.#delivered.delete(p);
      this.#doneBefore.delete(p);
    }
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
    const started = performance.now();
    const { partition } = batch;
    const delivered = this.#delivered.get(partition) ?? new Set<string>();
    this.#delivered.set(partition, delivered);
    const doneBefore = this.#doneBefore.get(partition) ?? -1;
    const todo = records.filter((r) => Number(r.offset) >= doneBefore && !delivered.has(r.offset));
    const items = await this.#parse(todo);
    this.#stats.requests += items.length;
    for (const item of items) if (!item.parsed.ok && item.parsed.address) replyError(item, this.#replySchemaId, this.#clock());
    await (this.#router as Router).answerOrForward(
      partition,
      items.filter((i): i is Pending => i.parsed.ok),
      () => ctx.heartbeat(),
    );
    const refused = new Map<Item, string>();
    for (const item of items) if (!item.parsed.ok) refused.set(item, item.parsed.error.code);
    await (this.#delivery as Delivery).deliver(batch, items, delivered, () => ctx.heartbeat(), refused);
    if (refused.size > 0) this.#reportRefused(partition, refused);
    const last = records.at(-1) as InRecord;
    if (this.#log.isLevelEnabled("debug")) {
      const forwarded = items.filter((i) => i.forwardedTo !== undefined).length;
      this.#log.debug(
        { partition, from: records[0]?.offset, to: last.offset, skipped: records.length - todo.length, forwarded, refused: refused.size },
        "step done",
      );
    }
    ctx.commit(String(Number(last.offset) + 1));
    const lag = Number(batch.highWatermark) - (Number(last.offset) + 1);
    this.#p.events.emit("worker.step", { partition, records: records.length, ms: performance.now() - started, lag: Math.max(0, lag) });
    this.#doneBefore.set(partition, Number(last.offset) + 1);
    delivered.clear();
    await ctx.heartbeat();
  }

  /** Counts a step's refused requests per sequence (as the request named it) and code, for instrumentation. */
  #reportRefused(partition: number, refused: Map<Item, string>): void {
    const counts = new Map<string, { sequence: string; code: string; requests: number }>();
    for (const [item, code] of refused) {
      const sequence = item.parsed.ok ? item.parsed.request.sequence : item.parsed.sequence;
      const key = `${sequence}\u0000${code}`;
      const c = counts.get(key) ?? { sequence, code, requests: 0 };
      c.requests++;
      counts.set(key, c);
    }
    this.#p.events.emit("worker.refused", { partition, counts: [...counts.values()] });
  }

  /** Parses records (loading unknown schema ids once per step), then checks that reply addresses exist. */
  async #parse(records: InRecord[]): Promise<Item[]> {
    const fetched = Date.now(); // every reply topic these records name existed before now
    const unknown = records.map((r) => this.#p.decoder.unknownSchemaId(r.value)).filter((id) => id !== undefined);
    const { decoder, metadata } = this.#p;
    if (unknown.length > 0) await decoder.load(unknown);
    const items: Item[] = records.map((record) => ({ record, parsed: parseRequest(record, decoder, this.#c) }));
    const addressed = items.flatMap((i) => (i.parsed.address ? [i.parsed.address] : []));
    if (addressed.length === 0) return items;
    const counts = await metadata.partitions(addressed, fetched);
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
}
