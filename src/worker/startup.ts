/**
 * What a worker starts besides its consumer: the HTTP surface (src/ops/), and following the request
 * topic's partition count (sequences are homed by it: docs/wire-contract.md: Routing).
 */
import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { IddError } from "../core/errors.js";
import { type OpsServer, startOpsServer } from "../ops/http.js";
import { createMetrics } from "../ops/metrics.js";
import { Readiness } from "../ops/readiness.js";
import { StatusModel } from "../ops/status.js";
import { PartitionCount } from "../ownership/partition-count.js";
import { topicDurability } from "../transport/kafka/index.js";
import type { WorkerParts } from "./parts.js";

/** How long a worker waits for the brokers' metadata before it takes a smaller count as a topic created again. */
const RECREATED_CHECK_MS = 2000;

export interface Ops {
  server: OpsServer;
  readiness: Readiness;
}

/** /status, /status.json, /metrics, /healthz and /readyz on IDD_HTTP_HOST:IDD_HTTP_PORT. */
export async function startOps(parts: WorkerParts, config: Config, log: Logger, partitions: () => number): Promise<Ops> {
  const { redis, store, allocator, events, kafka } = parts;
  const readiness = new Readiness({
    probes: [
      { name: "redis", ping: () => redis.ping() },
      { name: "mongodb", ping: () => store.ping() },
    ],
    budgetMs: config.readyOutageBudgetMs,
    timeoutMs: config.redisTimeoutMs,
    events,
  });
  const metrics = createMetrics({
    events,
    counters: () => allocator.snapshots(),
    roundTrips: () => ({ redis: allocator.stats.redisCalls, mongodb: store.stats.reads + store.stats.writes }),
    mongodbLoad: () => store.load,
    maxSequences: config.metricsMaxSequences,
    forecasts: () => parts.capacity.forecasts(),
    ready: () => readiness.state().ready,
  });
  const status = new StatusModel({
    events,
    workerId: config.workerId,
    groupId: config.groupId,
    requestTopic: config.requestTopic,
    requestPartitions: partitions,
    counters: () => allocator.snapshots(),
    forecasts: () => parts.capacity.forecasts(),
    readiness: () => readiness.state(),
    pool: (group, topic) => kafka.groupPartitions(group, topic),
    maxSequences: config.metricsMaxSequences,
  });
  const server = await startOpsServer({
    host: config.httpHost,
    port: config.httpPort,
    metrics,
    readiness,
    status: () => status.snapshot(),
    ...(config.httpToken && { token: config.httpToken }),
  });
  log.info({ url: `http://${config.httpHost}:${server.port}/status` }, "serving /status, /status.json, /metrics, /healthz, /readyz");
  return { server, readiness };
}

/**
 * Learns the request topic's partition count (the brokers', or a larger one some owner routed by,
 * from Redis), routes the dispenser by it, and follows its growth: asked every IDD_TOPIC_REFRESH_MS
 * and when a record shows it stale. A change re-homes sequences: the dispenser drops what it held.
 * Returns the count and the timer to clear at stop.
 */
export async function followPartitionCount(
  parts: WorkerParts,
  config: Config,
  log: Logger,
): Promise<{ count: PartitionCount; timer: NodeJS.Timeout }> {
  const { kafka, ownership, metadata, events } = parts;
  const topic = config.requestTopic;
  let fromBrokers = (await kafka.partitionCount(topic)) ?? config.requestPartitions;
  let inForce = await ownership.partitionsInForce();
  if (inForce > fromBrokers) {
    // Either the brokers' metadata lags a growth another worker already routes by (it catches up
    // within a second or two), or the topic was deleted and created again with fewer partitions:
    // Kafka never shrinks a topic. Routing by a count the topic no longer has would forward to
    // partitions that do not exist, for good; so once the brokers still say fewer, the count in
    // force is set back to theirs (workers of the old topic, if any still run, need a restart).
    await new Promise((r) => setTimeout(r, RECREATED_CHECK_MS));
    fromBrokers = (await kafka.partitionCount(topic)) ?? fromBrokers;
    if (inForce > fromBrokers) {
      log.warn(
        { topic, partitions: fromBrokers, inForce },
        "the request topic has fewer partitions than workers routed by: it was created again; routing by its count",
      );
      await ownership.setPartitionsInForce(fromBrokers);
      inForce = fromBrokers;
    }
  }
  const count = new PartitionCount(Math.max(fromBrokers, inForce), {
    fetch: () => kafka.partitionCount(topic),
  });
  ownership.routeBy(count.value);
  count.onChange((now, was) => {
    metadata.invalidate(); // forwards to the new partitions must not be judged on an older snapshot
    const dropped = ownership.routeBy(now);
    events.emit("worker.partitions", { partitions: now, was, droppedNumbers: dropped });
    log.info(
      { topic, partitions: now, was, droppedNumbers: dropped.toString() },
      "the request topic has more partitions: sequences re-homed, blocks dropped",
    );
  });
  const timer = setInterval(() => void count.refresh(), config.topicRefreshMs);
  timer.unref();
  log.info({ topic, partitions: count.value }, "routing by the request topic's partition count");
  return { count, timer };
}

/**
 * Creates the request and dead-letter topics when missing, replicated as configured (by default 3
 * copies and min.insync.replicas 2 on a cluster of 3 or more brokers, else what the cluster has),
 * and says at start what each topic really has: a warning when an existing topic keeps fewer copies
 * than configured (idd does not change existing topics). CONFIG_INVALID when the cluster cannot
 * hold what is asked.
 */
export async function ensureTopics(parts: WorkerParts, config: Config, log: Logger): Promise<void> {
  const { kafka } = parts;
  const brokers = await kafka.brokerCount();
  const wanted = topicDurability(brokers, config.topicReplicationFactor || undefined, config.topicMinInsyncReplicas || undefined);
  const { replicationFactor, minInsyncReplicas } = wanted;
  if (replicationFactor > brokers || minInsyncReplicas > replicationFactor)
    throw new IddError(
      "CONFIG_INVALID",
      `topics of replication factor ${replicationFactor} and min.insync.replicas ${minInsyncReplicas} cannot be written on a cluster of ${brokers} broker(s) (IDD_TOPIC_REPLICATION_FACTOR, IDD_TOPIC_MIN_INSYNC_REPLICAS)`,
    );
  await kafka.ensureTopics([
    { topic: config.requestTopic, partitions: config.requestPartitions, ...wanted },
    { topic: config.deadLetterTopic, partitions: 1, ...wanted },
  ]);
  for (const topic of [config.requestTopic, config.deadLetterTopic]) {
    const has = await kafka.topicDurability(topic);
    const fewer = has.replicationFactor < replicationFactor || has.minInsyncReplicas < minInsyncReplicas;
    if (fewer)
      log.warn(
        { topic, ...has, wanted, brokers },
        "the topic keeps fewer copies than configured: idd does not change existing topics (kafka-reassign-partitions, kafka-configs)",
      );
    else log.info({ topic, ...has, brokers }, "topic durability");
  }
}
