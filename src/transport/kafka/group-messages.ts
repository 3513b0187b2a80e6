/**
 * A produce call's messages grouped per partition in one pass: what kafkajs's
 * `src/producer/groupMessagesPerPartition.js` returns, without copying a partition's array for every
 * message it adds (kafkajs's `[...current, message]` is quadratic in the messages of one partition,
 * and under a burst a fifth of the bytes a worker allocated). Put in kafkajs's place by
 * kafkajs-modules.ts.
 */

interface GroupArgs<M> {
  topic: string;
  partitionMetadata: unknown[];
  messages: M[];
  partitioner: (a: { topic: string; partitionMetadata: unknown[]; message: M }) => number;
}

/** Messages by partition, in their order; none without partition metadata. */
export function groupMessagesPerPartition<M>({ topic, partitionMetadata, messages, partitioner }: GroupArgs<M>): Record<number, M[]> {
  const out: Record<number, M[]> = {};
  if (partitionMetadata.length === 0) return out;
  for (const message of messages) {
    const partition = partitioner({ topic, partitionMetadata, message });
    const current = out[partition];
    if (current) current.push(message);
    else out[partition] = [message];
  }
  return out;
}
