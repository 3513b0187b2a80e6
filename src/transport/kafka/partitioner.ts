/**
 * Where a record goes when it is sent without a partition: Kafka's Java default (murmur2), or a
 * client's own KeyPartitioner adapted to kafkajs.
 */
import type { ICustomPartitioner, PartitionMetadata } from "kafkajs";
import { loadKafkajs } from "./kafkajs-modules.js";

/** Picks a record's partition from its key and the topic's partition count (a client's partitioner). */
export type KeyPartitioner = (key: Buffer | null, partitions: number) => number;

/** The partition Kafka's Java client (and kafkajs) would choose for `key`: murmur2, positive, modulo. */
let javaPartitioner: ReturnType<ICustomPartitioner> | undefined;
/** One made-up metadata list per partition count (the partitioner reads only its length). */
const layouts = new Map<number, PartitionMetadata[]>();
export function partitionForKey(topic: string, key: Buffer | string | null, partitions: number): number {
  let partitionMetadata = layouts.get(partitions);
  if (!partitionMetadata) {
    partitionMetadata = Array.from({ length: partitions }, (_, i) => ({
      partitionId: i,
      leader: 0,
      replicas: [0],
      isr: [0],
      partitionErrorCode: 0,
    }));
    layouts.set(partitions, partitionMetadata);
  }
  javaPartitioner ??= loadKafkajs().Partitioners.DefaultPartitioner();
  return javaPartitioner({ topic, partitionMetadata, message: { key, value: null } });
}

/** kafkajs's `createPartitioner` for `own`, or Java's murmur2 (as partitionForKey) without one. */
export function kafkajsPartitioner(own?: KeyPartitioner): ICustomPartitioner {
  return own
    ? () =>
        ({ partitionMetadata, message }: { partitionMetadata: PartitionMetadata[]; message: { key?: Buffer | string | null } }) =>
          own(message.key == null ? null : Buffer.from(message.key), partitionMetadata.length)
    : loadKafkajs().Partitioners.DefaultPartitioner;
}
