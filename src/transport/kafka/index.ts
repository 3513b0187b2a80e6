/**
 * The Kafka seam: the few things idd needs from a Kafka client, implemented with kafkajs. Nothing
 * else in src/ imports kafkajs, so a maintained client can be measured against it behind the same
 * interface.
 */
import type { Consumer as KConsumer } from "kafkajs";
import { type GroupView, KafkaAdmin } from "./admin.js";
import { KafkaConnection, type KafkaOptions } from "./connection.js";
import type { KeyPartitioner } from "./partitioner.js";
import { KafkaProducer, type Producer } from "./producer.js";
import type { Batch, BatchContext } from "./records.js";

export type { GroupPartition, GroupView } from "./admin.js";
export type { KafkaOptions } from "./connection.js";
export { kafkaAuthFailure, SendFailure, type SendFailureKind } from "./errors.js";
export { type KeyPartitioner, partitionForKey } from "./partitioner.js";
export type { Producer } from "./producer.js";
export type { Batch, BatchContext, InRecord, OutRecord } from "./records.js";

export interface ConsumerOptions {
  groupId: string;
  topic: string;
  fromBeginning?: boolean;
  sessionTimeoutMs?: number;
  heartbeatMs?: number;
  /** How many partitions are processed at once (each one in order). */
  concurrency?: number;
  /**
   * How old the consumer's topic metadata may get: partitions added to `topic` are read (the group
   * rebalances) within about this long.
   */
  metadataMaxAgeMs?: number;
  /** Fetch limits: what one fetch may bring per partition and in all (bounds memory under a backlog). */
  maxBytesPerPartition?: number;
  maxBytes?: number;
  onBatch(batch: Batch, ctx: BatchContext): Promise<void>;
  /** Called after every (re)join with the partitions of `topic` now assigned to this member. */
  onAssigned?(partitions: number[]): void;
  /** Called when the consumer crashed (kafkajs restarts it, or a new member joins). */
  onCrash?(error: Error): void;
}

export interface Consumer {
  /** Stops fetching, waits for the batch in flight, leaves the group. */
  close(): Promise<void>;
}

export interface KafkaTransport {
  /** Every topic of the cluster with its partition count (one metadata request). */
  topicPartitions(): Promise<Map<string, number>>;
  /** One topic's partition count, undefined when it does not exist (one metadata request for that topic). */
  partitionCount(topic: string): Promise<number | undefined>;
  /** A consumer group's view of `topic`: every partition's owner, committed and end offsets (three admin requests). */
  groupPartitions(groupId: string, topic: string): Promise<GroupView>;
  ensureTopics(topics: { topic: string; partitions: number }[]): Promise<void>;
  /** `partitioner` places records sent without a partition (default: Kafka's Java murmur2). */
  producer(opts?: { partitioner?: KeyPartitioner }): Promise<Producer>;
  consumer(opts: ConsumerOptions): Promise<Consumer>;
  deleteTopics(topics: string[]): Promise<void>;
  /** Disconnects the admins kept for lookups (a producer's close disconnects the metadata one too). */
  close(): Promise<void>;
}

export function createKafka(opts: KafkaOptions): KafkaTransport {
  const connection = new KafkaConnection(opts);
  const admin = new KafkaAdmin(connection);
  return {
    topicPartitions: () => admin.topicPartitions(),
    partitionCount: (topic) => admin.partitionCount(topic),
    groupPartitions: (groupId, topic) => admin.groupPartitions(groupId, topic),
    ensureTopics: (topics) => admin.ensureTopics(topics),
    deleteTopics: (topics) => admin.deleteTopics(topics),
    close: () => admin.close(),

    producer: (po = {}) =>
      KafkaProducer.connect(connection, {
        ...(po.partitioner && { partitioner: po.partitioner }),
        listTopics: () => admin.listTopics(),
        onClose: () => admin.closeMetadata(), // as before the split: a producer's close disconnects the metadata admin
      }),

    async consumer(o) {
      let c: KConsumer;
      let closed = false;
      /**
       * Starts a fresh member after one crashed for good, trying until it is in or the consumer is
       * closed: a broker that is still down (restarting, unreachable) must not leave the worker out
       * of the group for good, alive but answering nothing.
       */
      const rejoin = async (crashed: KConsumer) => {
        await crashed.disconnect().catch(() => {});
        for (let attempt = 1, waitMs = 1000; !closed; attempt++, waitMs = Math.min(waitMs * 2, 30_000)) {
          await new Promise((r) => setTimeout(r, waitMs));
          if (closed) return;
          try {
            await start();
            return;
          } catch (err) {
            opts.logger?.warn(
              { err: (err as Error).message, attempt, retryInMs: Math.min(waitMs * 2, 30_000) },
              "rejoining failed; trying again",
            );
            await c.disconnect().catch(() => {});
          }
        }
      };
      /** The last commit in flight per topic/partition (each waits for the one before). */
      const commits = new Map<string, Promise<void>>();
      const start = async () => {
        c = connection.consumer({
          groupId: o.groupId,
          sessionTimeout: o.sessionTimeoutMs ?? 10_000,
          heartbeatInterval: o.heartbeatMs ?? 1000,
          allowAutoTopicCreation: false,
          maxWaitTimeInMs: 100,
          ...(o.metadataMaxAgeMs && { metadataMaxAge: o.metadataMaxAgeMs }),
          ...(o.maxBytesPerPartition && { maxBytesPerPartition: o.maxBytesPerPartition }),
          ...(o.maxBytes && { maxBytes: o.maxBytes }),
        });
        c.on(c.events.GROUP_JOIN, (e) => o.onAssigned?.(e.payload.memberAssignment[o.topic] ?? []));
        // kafkajs gives up on some errors for good (e.g. "the coordinator is not aware of this member"
        // after the process was paused past its session timeout) and leaves the process alive but out
        // of the group. Start a fresh member instead: it joins, and its assignment says what was lost.
        const member = c;
        c.on(c.events.CRASH, (e) => {
          if (!closed) o.onCrash?.(e.payload.error);
          if (e.payload.restart || closed) return;
          opts.logger?.warn({ err: e.payload.error?.message }, "Kafka consumer crashed for good: rejoining as a new member");
          o.onAssigned?.([]);
          void rejoin(member);
        });
        await connection.login(c);
        await c.subscribe({ topic: o.topic, fromBeginning: o.fromBeginning ?? true });
        await c.run({
          autoCommit: false,
          eachBatchAutoResolve: false,
          partitionsConsumedConcurrently: o.concurrency ?? 4,
          eachBatch: async ({ batch, heartbeat, isRunning, isStale, resolveOffset }) => {
            if (batch.messages.length === 0) return;
            await o.onBatch(
              {
                topic: batch.topic,
                partition: batch.partition,
                highWatermark: batch.highWatermark,
                records: batch.messages.map((m) => ({ key: m.key, value: m.value, headers: m.headers ?? {}, offset: m.offset })),
              },
              {
                heartbeat,
                isRunning: () => isRunning() && !isStale(),
                commit: (offset) => {
                  resolveOffset((BigInt(offset) - 1n).toString());
                  const key = `${batch.topic}/${batch.partition}`;
                  const next = (commits.get(key) ?? Promise.resolve())
                    .then(() => member.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset }]))
                    .catch((e: unknown) => opts.logger?.warn({ err: (e as Error).message, key, offset }, "committing offsets failed"));
                  commits.set(key, next);
                  void next.then(() => {
                    if (commits.get(key) === next) commits.delete(key);
                  });
                },
              },
            );
          },
        });
      };
      await start();
      return {
        async close() {
          closed = true;
          await c.stop();
          await Promise.all(commits.values());
          await c.disconnect();
        },
      };
    },
  };
}
