/**
 * A worker: one member of the consumer group on the request topic. Per partition, records are
 * handled in offset order (steps.ts); each step's replies are produced together and acknowledged
 * before its offsets are committed. Losing a partition drops the unissued blocks of its sequences (I3).
 * `Worker.start` returns a running worker, every part of it built.
 */
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import type { IddError } from "../core/errors.js";
import type { Instrumentation } from "../core/events.js";
import { rateLimited } from "../core/log.js";
import { loadHooks } from "../hooks/load.js";
import type { Allocator } from "../issuing/sources/counter/allocator.js";
import { replySchemaText, requestSchemaText } from "../protocol/avro.js";
import { REPLY_SUBJECT } from "../protocol/reply.js";
import { redisConnected, redisTarget } from "../redis/client.js";
import type { CodecName, Consumer, Producer } from "../transport/kafka/index.js";
import { ReplySender } from "../transport/reply-sender.js";
import { Delivery } from "./delivery.js";
import { type WorkerParts, workerParts } from "./parts.js";
import { Router } from "./router.js";
import { ensureTopics, followPartitionCount, type Ops, startOps } from "./startup.js";
import { newWorkerStats, type WorkerStats } from "./stats.js";
import { Steps } from "./steps.js";

export interface WorkerDeps {
  config: Config;
  logger: Logger;
  clock?: () => number;
  /**
   * The brokers refused a setting for good (CONFIG_INVALID): the worker no longer consumes and
   * cannot until it is configured otherwise. `idd worker` stops and exits; logged in any case.
   */
  onRefused?: (e: IddError) => void;
}

/** Everything a running worker is made of. */
interface Running {
  config: Config;
  log: Logger;
  parts: WorkerParts;
  stats: WorkerStats;
  producer: Producer;
  consumer: Consumer;
  /** The HTTP surface, when IDD_HTTP_PORT is set. */
  ops: Ops | undefined;
  /** Asks for the request topic's partition count. */
  partitionsTimer: NodeJS.Timeout;
}

export class Worker {
  readonly #r: Running;

  private constructor(running: Running) {
    this.#r = running;
  }

  /**
   * Starts a worker: the HTTP surface (if configured), MongoDB's indexes, Redis (fencing workers of an older
   * release out), hooks, the schemas, the topics, routing, the producer and the
   * consumer; resolves once it has joined the group. Throws with a coded error when a service
   * refuses it (e.g. REDIS_AUTH_FAILED).
   */
  static async start(deps: WorkerDeps): Promise<Worker> {
    const parts = workerParts(deps.config, deps.logger, deps.clock ?? Date.now);
    const opened: { ops?: Ops } = {};
    try {
      return await Worker.#start(deps, parts, opened);
    } catch (e) {
      // A start that failed (a service refused it, a setting the cluster cannot hold) leaves no
      // connection open; not waited for, so that the coded line comes at once.
      parts.redis.disconnect();
      void parts.store.close().catch(() => {});
      void parts.kafka.close().catch(() => {});
      void opened.ops?.server.close().catch(() => {});
      throw e;
    }
  }

  static async #start(deps: WorkerDeps, parts: WorkerParts, opened: { ops?: Ops }): Promise<Worker> {
    const config = deps.config;
    const log = deps.logger.child({ component: "worker" });
    const clock = deps.clock ?? Date.now;
    let routedBy: (() => number) | undefined;
    const ops = config.httpPort > 0 ? await startOps(parts, config, log, () => routedBy?.() ?? config.requestPartitions) : undefined;
    if (ops) opened.ops = ops;
    await parts.store.ensureIndexes();
    // Commands do not queue while Redis is unconnected (they fail fast instead, G3), so the first
    // ones wait for the connection, up to a bound: a Redis that is down at start fails them as
    // usual, and one that refuses the login stops the start (REDIS_AUTH_FAILED).
    await redisConnected(parts.redis, redisTarget(config.services), Math.max(5000, 5 * config.redisTimeoutMs));
    // Workers of the release before per-sequence keys, if any still run, publish nothing from now
    // on (docs/design.md §5.15).
    await parts.ownership.fenceOldWorkers();
    parts.hooks.use(
      await loadHooks(
        config.hooks,
        { worker: config.workerId, logger: log, store: parts.store, env: process.env },
        { rateLogMs: config.rateLogMs },
      ),
    );
    if (parts.hooks.active) log.info({ hooks: parts.hooks.names }, "issuance hooks loaded");
    await parts.registry.register(`${config.requestTopic}-value`, requestSchemaText);
    const replySchemaId = await parts.registry.register(REPLY_SUBJECT, replySchemaText);
    await ensureTopics(parts, config, log);
    const routing = await followPartitionCount(parts, config, log);
    routedBy = () => routing.count.value;
    const producer = await parts.kafka.producer({ compression: config.replyCompression as CodecName });
    const stats = newWorkerStats();
    const sender = new ReplySender(producer, parts.metadata, {
      maxRecords: config.sendMaxRecords,
      maxBytes: config.sendMaxBytes,
      retryMs: config.replyRetryMs,
      concurrency: config.sendConcurrency,
    });
    const delivery = new Delivery({
      sender,
      metadata: parts.metadata,
      requestTopic: config.requestTopic,
      deadLetterTopic: config.deadLetterTopic,
      events: parts.events,
      stats,
      limitedLog: rateLimited(log),
    });
    const router = new Router({
      requestTopic: config.requestTopic,
      count: routing.count,
      dispenser: parts.dispenser,
      ownership: parts.ownership,
      replySchemaId,
      clock,
      log,
    });
    const steps = new Steps({
      stepRecords: config.stepRecords,
      limits: config,
      decoder: parts.decoder,
      metadata: parts.metadata,
      ownership: parts.ownership,
      events: parts.events,
      duties: [parts.gaplessSweep, parts.sampleRetention],
      router,
      delivery,
      stats,
      replySchemaId,
      clock,
      log,
    });
    const consumer = await parts.kafka.consumer({
      groupId: config.groupId,
      topic: config.requestTopic,
      sessionTimeoutMs: config.sessionTimeoutMs,
      heartbeatMs: config.heartbeatMs,
      commitIntervalMs: config.commitIntervalMs,
      maxBytesPerPartition: config.fetchMaxBytesPerPartition,
      maxBytes: config.fetchMaxBytesPerPartition * config.requestPartitions,
      metadataMaxAgeMs: config.topicRefreshMs,
      onBatch: (batch, ctx) => steps.handleBatch(batch, ctx),
      onAssigned: (partitions) => steps.assigned(partitions),
      onCrash: (e, selfHealing) => {
        parts.events.emit("worker.consumer", { running: false });
        // A state the broker gets out of by itself (a coordinator loading on a fresh broker): a
        // warning in idd's words; "Kafka consumer crashed" stays for what may need a person (the
        // chaos checks count those lines).
        if (selfHealing) return void log.warn({ err: e.message }, selfHealing);
        stats.crashes++;
        log.error({ err: e.message }, "Kafka consumer crashed");
      },
      onRefused: (e) => {
        parts.events.emit("worker.consumer", { running: false });
        log.error({ code: e.code, err: e.message }, "the brokers refuse this worker's settings: it stopped consuming");
        deps.onRefused?.(e);
      },
    });
    parts.events.emit("worker.consumer", { running: true });
    parts.gaplessSweep.start();
    parts.sampleRetention.start();
    parts.capacity.start();
    ops?.readiness.started();
    log.info({ topic: config.requestTopic, group: config.groupId }, "worker started");
    return new Worker({ config, log, parts, stats, producer, consumer, ops, partitionsTimer: routing.timer });
  }

  get stats() {
    return { ...this.#r.stats, ...this.#r.parts.dispenser.stats };
  }

  get allocator(): Allocator {
    return this.#r.parts.allocator;
  }

  /** What the worker reports as it works (src/core/events.ts): its metrics and readiness listen, and so may an embedder. */
  get events(): Instrumentation {
    return this.#r.parts.events;
  }

  /** SIGTERM path: stop fetching, finish and commit the batch in flight, leave the group, flush logs. */
  async stop(): Promise<void> {
    const { parts, ops, log } = this.#r;
    ops?.readiness.stop();
    clearInterval(this.#r.partitionsTimer);
    parts.events.emit("worker.consumer", { running: false });
    await this.#r.consumer.close();
    await parts.gaplessSweep.stop();
    await parts.sampleRetention.stop();
    await parts.capacity.stop();
    await parts.hooks.close();
    await parts.snowflakes.close();
    await parts.allocator.close();
    await this.#r.producer.close();
    await parts.kafka.close();
    parts.redis.disconnect();
    await parts.store.close();
    await ops?.server.close();
    log.info(
      { ...this.stats, hooks: parts.hooks.stats, store: parts.store.stats, redisCalls: parts.allocator.stats.redisCalls },
      "worker stopped",
    );
  }
}
