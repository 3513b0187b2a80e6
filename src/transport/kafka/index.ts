/**
 * The Kafka seam: the few things idd needs from a Kafka client, implemented with kafkajs. Nothing
 * else in src/ imports kafkajs, so a maintained client can be measured against it behind the same
 * interface.
 */
import { type GroupView, KafkaAdmin, type TopicDurability, type TopicSpec } from "./admin.js";
import type { CodecName } from "./codecs.js";
import { KafkaConnection, type KafkaOptions } from "./connection.js";
import { type Consumer, type ConsumerOptions, KafkaConsumer } from "./consumer.js";
import { kafkajsHasIddModules } from "./kafkajs-modules.js";
import type { KeyPartitioner } from "./partitioner.js";
import { KafkaProducer, type Producer } from "./producer.js";

export type { GroupPartition, GroupView, TopicDurability, TopicSpec } from "./admin.js";
export { CODEC_NAMES, type CodecName, compressionProblem } from "./codecs.js";
export type { KafkaOptions } from "./connection.js";
export type { Consumer, ConsumerOptions } from "./consumer.js";
export { topicDurability } from "./durability.js";
export { kafkaAuthFailure, SendFailure, type SendFailureKind } from "./errors.js";
export { type KeyPartitioner, partitionForKey } from "./partitioner.js";
export type { Producer } from "./producer.js";
export type { Batch, BatchContext, InRecord, OutRecord, Unreadable } from "./records.js";

let warnedOwnModules = false;

export interface KafkaTransport {
  /** Every topic of the cluster with its partition count (one metadata request). */
  topicPartitions(): Promise<Map<string, number>>;
  /** One topic's partition count, undefined when it does not exist (one metadata request for that topic). */
  partitionCount(topic: string): Promise<number | undefined>;
  /** A consumer group's view of `topic`: every partition's owner, committed and end offsets (three admin requests). */
  groupPartitions(groupId: string, topic: string): Promise<GroupView>;
  /** Creates the topics that do not exist (with the replication given); existing ones are left as they are. */
  ensureTopics(topics: TopicSpec[]): Promise<void>;
  /** How many brokers the cluster has. */
  brokerCount(): Promise<number>;
  /** A topic's replication factor (its partitions' fewest replicas) and min.insync.replicas. */
  topicDurability(topic: string): Promise<TopicDurability>;
  /**
   * `partitioner` places records sent without a partition (default: Kafka's Java murmur2);
   * `compression` compresses what it sends (default: none).
   */
  producer(opts?: { partitioner?: KeyPartitioner; compression?: CodecName }): Promise<Producer>;
  consumer(opts: ConsumerOptions): Promise<Consumer>;
  deleteTopics(topics: string[]): Promise<void>;
  /** Disconnects the admins kept for lookups (a producer's close disconnects the metadata one too). */
  close(): Promise<void>;
}

/**
 * The seam for one cluster. First, kafkajs is loaded with idd's modules in place (kafkajs-modules.ts);
 * when a program loaded kafkajs before, it runs kafkajs's own, and that is said once.
 */
export function createKafka(opts: KafkaOptions): KafkaTransport {
  if (!kafkajsHasIddModules() && !warnedOwnModules) {
    warnedOwnModules = true;
    opts.logger?.warn(
      "kafkajs was loaded before idd: it runs its own record decoders, and a record batch it cannot decode stops its whole fetch (load idd first)",
    );
  }
  const connection = new KafkaConnection(opts);
  const admin = new KafkaAdmin(connection);
  return {
    topicPartitions: () => admin.topicPartitions(),
    partitionCount: (topic) => admin.partitionCount(topic),
    groupPartitions: (groupId, topic) => admin.groupPartitions(groupId, topic),
    ensureTopics: (topics) => admin.ensureTopics(topics),
    brokerCount: () => admin.brokerCount(),
    topicDurability: (topic) => admin.topicDurability(topic),
    deleteTopics: (topics) => admin.deleteTopics(topics),
    close: () => admin.close(),

    producer: (po = {}) =>
      KafkaProducer.connect(connection, {
        ...(po.partitioner && { partitioner: po.partitioner }),
        ...(po.compression && { compression: po.compression }),
        listTopics: () => admin.listTopics(),
        onClose: () => admin.closeMetadata(), // as before the split: a producer's close disconnects the metadata admin
      }),

    consumer: (o) => KafkaConsumer.start(connection, o, opts.logger),
  };
}
