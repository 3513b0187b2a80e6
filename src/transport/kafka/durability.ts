/**
 * How idd replicates the topics it creates (the worker its request and dead-letter topics,
 * IdClient its reply topic) unless told otherwise: 3 copies, fewer on a smaller cluster, and
 * min.insync.replicas 2 with 3 or more copies (1 below), so one broker lost keeps every topic
 * readable and writable with acks=all.
 */
import type { TopicDurability } from "./admin.js";

export function topicDurability(
  brokers: number,
  replicationFactor = Math.min(3, brokers),
  minInsyncReplicas = replicationFactor >= 3 ? 2 : 1,
): TopicDurability {
  return { replicationFactor, minInsyncReplicas };
}
