/**
 * Where a request's reply goes (docs/wire-contract.md: Headers): the reply topic and partition its
 * headers name in Spring's and NestJS's convention or in SmallRye's (or else the body's replyTo),
 * and the correlation headers to echo, each checked against the limits.
 */
import { IddError } from "../core/errors.js";
import {
  CORRELATION_HEADERS,
  HEADER_REPLY_PARTITION,
  HEADER_REPLY_TOPIC,
  headerBytes,
  headerString,
  headersBytes,
  type IHeaders,
  replyPartition,
  SMALLRYE_REPLY_PARTITION,
  SMALLRYE_REPLY_TOPIC,
} from "./headers.js";

export interface ReplyAddress {
  topic: string;
  partition?: number;
  /** The correlation headers the request carried (kafka_correlationId, REPLY_CORRELATION_ID), echoed as they came. */
  correlation?: Record<string, Buffer>;
}

/** The limits a reply address is checked against (a part of RequestLimits). */
export interface AddressLimits {
  maxCorrelationIdBytes: number;
  maxHeaderBytes: number;
  /** idd's own topics: never a reply address. */
  requestTopic: string;
  deadLetterTopic: string;
}

/**
 * The reply address the headers (or else the body's replyTo) name, or why no reply can be
 * delivered. Spring's and NestJS's kafka_replyTopic wins over SmallRye's REPLY_TOPIC, each with its
 * own partition header; every correlation header the request carries is echoed.
 */
export function replyAddress(
  h: IHeaders | undefined,
  replyTo: string | null | undefined,
  limits: AddressLimits,
): ReplyAddress | IddError | undefined {
  let correlation: Record<string, Buffer> | undefined;
  for (const name of CORRELATION_HEADERS) {
    const id = headerBytes(h, name);
    if (!id) continue;
    if (id.length > limits.maxCorrelationIdBytes)
      return new IddError("CORRELATION_ID_TOO_LARGE", `${name} has ${id.length} bytes; the maximum is ${limits.maxCorrelationIdBytes}`);
    correlation = { ...correlation, [name]: id };
  }
  const size = headersBytes(h);
  if (size > limits.maxHeaderBytes) {
    return new IddError("HEADERS_TOO_LARGE", `headers have ${size} bytes; the maximum is ${limits.maxHeaderBytes}`);
  }
  const spring = headerString(h, HEADER_REPLY_TOPIC);
  const smallrye = spring === undefined ? headerString(h, SMALLRYE_REPLY_TOPIC) : undefined;
  const topic = spring ?? smallrye ?? replyTo;
  if (!topic) return undefined;
  const problem = topicProblem(topic, limits);
  if (problem) return new IddError("REPLY_TOPIC_INVALID", problem);
  const partitionHeader = smallrye !== undefined ? SMALLRYE_REPLY_PARTITION : HEADER_REPLY_PARTITION;
  const partition = replyPartition(h, partitionHeader);
  if (Number.isNaN(partition))
    return new IddError("REPLY_PARTITION_INVALID", `${partitionHeader} is neither a 4-byte int ≥ 0 nor decimal digits`);
  const address: ReplyAddress = { topic };
  if (partition !== undefined) address.partition = partition;
  if (correlation) address.correlation = correlation;
  return address;
}

const TOPIC_NAME = /^[A-Za-z0-9._-]{1,249}$/;

/** Why a reply could not be delivered to `topic`, or undefined when it is a topic name idd may write to. */
function topicProblem(topic: string, limits: AddressLimits): string | undefined {
  if (!legalTopics.has(topic)) {
    if (!TOPIC_NAME.test(topic) || topic === "." || topic === "..") {
      return `reply topic "${topic.slice(0, 64)}" is not a legal Kafka topic name (1-249 of A-Z a-z 0-9 . _ -)`;
    }
    if (topic.startsWith("__")) return `reply topic "${topic}" is reserved for Kafka's internal use`;
    if (legalTopics.size >= MAX_LEGAL_TOPICS) legalTopics.clear();
    legalTopics.add(topic);
  }
  // Not cached: which topics are idd's own depends on the caller's settings.
  if (topic === limits.requestTopic || topic === limits.deadLetterTopic) return `reply topic "${topic}" is one of idd's own topics`;
  return undefined;
}

/** Names already found legal Kafka topic names outside Kafka's own (client input: bounded, cleared when full). */
const legalTopics = new Set<string>();
const MAX_LEGAL_TOPICS = 10_000;
