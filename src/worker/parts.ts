/**
 * Every part a worker is made of, built in one place from the validated configuration: one client
 * per real dependency (Kafka, Redis, MongoDB, the schema registry) and what is built on them.
 */
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { Instrumentation } from "../core/events.js";
import { rateLimited } from "../core/log.js";
import { Hooks } from "../hooks/hooks.js";
import { Dispenser } from "../issuing/dispenser.js";
import { Allocator } from "../issuing/sources/counter/allocator.js";
import { SampleRetention } from "../issuing/sources/counter/sample-retention.js";
import { GaplessForecasts } from "../issuing/sources/gapless/gapless-forecast.js";
import { GaplessSource } from "../issuing/sources/gapless/gapless-source.js";
import { GaplessSweep } from "../issuing/sources/gapless/gapless-sweep.js";
import { firstLeaseCheck } from "../issuing/sources/snowflake/first-lease.js";
import { SnowflakeIssuer } from "../issuing/sources/snowflake/issuer.js";
import { CapacityWatch } from "../ops/capacity-watch.js";
import { Ownership } from "../ownership/ownership.js";
import { RequestDecoder } from "../protocol/request.js";
import { AnswerRecorder } from "../recording/answer-recorder.js";
import { createRedis, redisTarget } from "../redis/client.js";
import type { RedisClient } from "../redis/client-type.js";
import { RegistryClient } from "../registry/client.js";
import { SequenceCache } from "../sequences/cache.js";
import { obfuscationKeysOf } from "../sequences/obfuscation/keys.js";
import { Store } from "../storage/store.js";
import { createKafka, type KafkaTransport } from "../transport/kafka/index.js";
import { TopicMetadata } from "../transport/topic-metadata.js";

export interface WorkerParts {
  kafka: KafkaTransport;
  redis: RedisClient;
  store: Store;
  registry: RegistryClient;
  decoder: RequestDecoder;
  metadata: TopicMetadata;
  allocator: Allocator;
  /** Empty until the worker loads the configured ones at start. */
  hooks: Hooks;
  events: Instrumentation;
  snowflakes: SnowflakeIssuer;
  /** The partitions' leases: gens, the partition count routed by and in force, the `revoked` event. */
  ownership: Ownership;
  /** Fenced records and dedupe (the dispenser's). */
  recorder: AnswerRecorder;
  dispenser: Dispenser;
  /** Voids expired gapless numbers and counts them per state (started with the consumer). */
  gaplessSweep: GaplessSweep;
  /** Deletes samples older than IDD_SAMPLE_RETENTION_DAYS (started with the consumer; led like the sweep). */
  sampleRetention: SampleRetention;
  /** The sequences' capacity forecasts, for /metrics and /status, and their warnings (started with the consumer). */
  capacity: CapacityWatch;
}

export function workerParts(c: Config, logger: Logger, clock: () => number): WorkerParts {
  const s = c.services;
  const log = logger.child({ component: "worker" });
  const kafka = createKafka({ brokers: s.kafkaBrokers, clientId: `idd-${c.workerId}`, logger, security: s.security.kafka });
  // A Redis that hangs (paused, partitioned without a reset) must not hang batches past the
  // session: commands time out and the worker serves from blocks in memory (G3).
  const redis = createRedis(redisTarget(s), {
    options: { maxRetriesPerRequest: 2, enableOfflineQueue: false, commandTimeout: c.redisTimeoutMs },
    onError: (err) => log.warn({ err }, "redis connection error"),
  });
  const events = new Instrumentation();
  const poolLog = rateLimited(log, 1);
  const store = new Store(s.mongodbUrl, {
    onBreaker: (open) => events.emit("breaker.state", { what: "mongodb", open }),
    // A step waits at most its budget for a MongoDB connection (src/storage/in-flight.ts).
    maxWaitMs: c.stepBudgetMs,
    onPoolTimeout: () =>
      poolLog("warn", { timeouts: store.load.poolTimeouts }, "MongoDB pool checkout timed out: more operations than connections"),
  });
  const registry = new RegistryClient(s.schemaRegistryUrl, { security: s.security.registry });
  const allocator = new Allocator({
    redis,
    store,
    worker: c.workerId,
    config: c,
    clock,
    flushMs: c.flushMs,
    sampleMs: c.sampleMs,
    events,
    onLogError: (what, e, buffered) =>
      log.warn({ err: (e as Error).message, buffered }, `appending ${what} to MongoDB failed; kept for the next flush`),
  });
  const hooks = new Hooks([], { timeoutMs: c.hookTimeoutMs, maxPending: 10_000, logger });
  // Real time: leases bound it, an injected clock must not.
  const snowflakes = new SnowflakeIssuer({
    redis,
    events,
    lease: { ttlMs: c.snowflakeLeaseTtlMs, renewEveryMs: c.snowflakeLeaseRenewMs, marginMs: c.snowflakeLeaseMarginMs },
    generator: { maxBackwardWaitMs: c.snowflakeMaxBackwardWaitMs },
    firstLease: firstLeaseCheck(store),
  });
  const ownership = new Ownership(redis, c.requestTopic, events);
  // Gapless counters' forecasts: sampled with the counters, forgotten with the lease they were issued under.
  const gaplessForecasts = new GaplessForecasts(clock);
  allocator.sampleAlso((ms) => gaplessForecasts.closeSample(ms));
  ownership.onRevoked((r) => {
    gaplessForecasts.forget(r.sequences);
    return undefined; // gapless numbers are never held: nothing given up
  });
  const recorder = new AnswerRecorder(redis, c.dedupeWindowMs);
  const dispenser = new Dispenser({
    snowflakes,
    gapless: new GaplessSource(store, c.workerId, gaplessForecasts),
    // Obfuscation keys are secrets: read from the environment (or the file it names), never from MongoDB, never logged.
    kinds: c.obfuscationKeys ? { obfuscation: obfuscationKeysOf(c.obfuscationKeys) } : {},
    hooks,
    events,
    allocator,
    ownership,
    recorder,
    issuance: { append: (records) => store.appendIssuance(records), worker: c.workerId },
    sequences: new SequenceCache(store, { ttlMs: c.sequenceCacheMs, clock, autoCreate: c.autoCreateSequences }),
    heartbeatMs: c.heartbeatMs,
    stepBudgetMs: c.stepBudgetMs,
    redisTimeoutMs: c.redisTimeoutMs,
    maxFormatted: c.maxFormatted,
    clock,
    logger,
  });
  return {
    kafka,
    redis,
    store,
    registry,
    decoder: new RequestDecoder(registry),
    metadata: new TopicMetadata(() => kafka.topicPartitions()),
    allocator,
    hooks,
    events,
    snowflakes,
    ownership,
    recorder,
    dispenser,
    gaplessSweep: new GaplessSweep({ store, worker: c.workerId, everyMs: c.gaplessSweepMs, clock, events, logger }),
    sampleRetention: new SampleRetention({ store, retentionDays: c.sampleRetentionDays, clock: Date.now, logger }),
    capacity: new CapacityWatch({
      counters: () => allocator.snapshots(),
      snowflakes: () => snowflakes.forecasts(),
      gapless: () => gaplessForecasts.forecasts(),
      refresh: () => snowflakes.countFreeWorkerIds(),
      warnDays: c.capacityWarnDays,
      everyMs: c.sampleMs,
      logger,
    }),
  };
}
