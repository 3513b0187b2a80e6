/**
 * The Kafka seam: the few things idd needs from a Kafka client, implemented with kafkajs. Nothing
 * else in src/ imports kafkajs, so a maintained client can be measured against it behind the same
 * interface.
 */
import type { Consumer as KConsumer, Producer as KProducer } from "kafkajs";
import { type GroupView, KafkaAdmin } from "./admin.js";
import { KafkaConnection, type KafkaOptions } from "./connection.js";
import { isUnknownTopic, SendFailure, toSendFailure } from "./errors.js";
import { type KeyPartitioner, kafkajsPartitioner } from "./partitioner.js";

export type { GroupPartition, GroupView } from "./admin.js";
export type { KafkaOptions } from "./connection.js";
export { kafkaAuthFailure, SendFailure, type SendFailureKind } from "./errors.js";
export { type KeyPartitioner, partitionForKey } from "./partitioner.js";

export interface OutRecord {
  topic: string;
  partition?: number;
  key: Buffer | string | null;
  value: Buffer;
  /** A header given more than once (a forwarded request keeps its headers as they came) is an array. */
  headers: Record<string, Buffer | string | (Buffer | string)[]>;
}

export interface InRecord {
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer | string | (Buffer | string)[] | undefined>;
  offset: string;
}

export interface Batch {
  topic: string;
  partition: number;
  records: InRecord[];
  /** The partition's end offset when the batch was fetched (its lag: this minus the next offset to read). */
  highWatermark: string;
}

export interface BatchContext {
  heartbeat(): Promise<void>;
  /** False once the consumer is stopping or rebalancing: no new work should start. */
  isRunning(): boolean;
  /**
   * Marks everything before `offset` (the next offset to read) done and commits it in the
   * background, in order per partition, so the next fetch need not wait for the round trip. A
   * commit that fails is logged: the partition's next owner reads those records again (idd answers
   * them alike). Closing the consumer waits for the commits in flight.
   */
  commit(offset: string): void;
}

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

export interface Producer {
  /**
   * Sends every record and resolves when all are acknowledged by all in-sync replicas. Records for
   * topics that do not exist (a client's reply topic deleted meanwhile) cannot be delivered: they
   * are left out and their topics returned.
   */
  send(records: OutRecord[]): Promise<{ undeliverable: string[] }>;
  /**
   * Sends records to one partition of one topic in one produce request, which the broker appends
   * whole or not at all, so a failure belongs to exactly these records. Throws a SendFailure.
   */
  sendPartition(topic: string, partition: number, records: OutRecord[]): Promise<void>;
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

    async producer(po = {}) {
      const createPartitioner = kafkajsPartitioner(po.partitioner);
      const connect = async () => {
        const p = connection.producer({
          createPartitioner,
          allowAutoTopicCreation: false,
          idempotent: false,
          retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 },
        });
        await connection.login(p);
        return p;
      };
      let p: KProducer = await connect();
      let renew = false;
      const sendBatch = (records: OutRecord[]) => {
        const byTopic = new Map<string, OutRecord[]>();
        for (const r of records) byTopic.set(r.topic, [...(byTopic.get(r.topic) ?? []), r]);
        return p.sendBatch({
          acks: -1,
          topicMessages: [...byTopic].map(([topic, rs]) => ({
            topic,
            messages: rs.map((r) => ({
              key: r.key,
              value: r.value,
              headers: r.headers,
              ...(r.partition !== undefined && { partition: r.partition }),
            })),
          })),
        });
      };
      return {
        async send(records) {
          if (records.length === 0) return { undeliverable: [] };
          try {
            await sendBatch(records);
            return { undeliverable: [] };
          } catch (e) {
            if (!isUnknownTopic(e)) throw e;
            // kafkajs keeps every topic it ever sent to in its metadata requests, so one deleted
            // topic fails every later send (kafkajs #1622): start over with a fresh producer and
            // leave out the records whose topic is gone.
            await p.disconnect().catch(() => {});
            p = await connect();
            const existing = new Set(await admin.listTopics());
            const undeliverable = [...new Set(records.map((r) => r.topic).filter((t) => !existing.has(t)))];
            await sendBatch(records.filter((r) => existing.has(r.topic)));
            return { undeliverable };
          }
        },
        async sendPartition(topic, partition, records) {
          if (renew) {
            renew = false;
            await p.disconnect().catch(() => {});
            p = await connect();
          }
          try {
            const written = await p.send({
              topic,
              acks: -1,
              messages: records.map((r) => ({ key: r.key, value: r.value, headers: r.headers, partition })),
            });
            // kafkajs leaves out, silently, records for a partition its own metadata does not show
            // yet (a topic grown since it last asked: kafkajs's Cluster.findLeaderForPartitions),
            // and reports success. Not acknowledged means not written: a fresh producer asks again.
            if (!written.some((w) => w.partition === partition)) {
              renew = true;
              throw new SendFailure(
                "unknown-topic",
                "PARTITION_NOT_IN_METADATA",
                `${topic}/${partition} is not in the producer's metadata yet; nothing was written`,
                undefined,
              );
            }
          } catch (e) {
            if (e instanceof SendFailure) throw e;
            const f = toSendFailure(e);
            // kafkajs keeps every topic it sent to in its metadata requests: after a topic is gone,
            // every later send fails (kafkajs #1622). The next send starts with a fresh producer.
            if (f.kind === "unknown-topic") renew = true;
            throw f;
          }
        },
        close: async () => {
          await p.disconnect();
          await admin.closeMetadata();
        },
      };
    },

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
