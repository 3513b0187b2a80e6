/**
 * Kafka headers of the request/reply contract (docs/wire-contract.md: Headers), in the conventions
 * of the request/reply clients users have:
 * - Spring Kafka's ReplyingKafkaTemplate and NestJS's ClientKafka: kafka_replyTopic,
 *   kafka_replyPartition, kafka_correlationId;
 * - Quarkus / SmallRye's KafkaRequestReply: REPLY_TOPIC, REPLY_PARTITION, REPLY_CORRELATION_ID.
 * A correlation id is opaque bytes echoed unchanged under the name it came with; a reply partition
 * is a 4-byte big-endian int (Spring, SmallRye) or ASCII decimal (NestJS). A header a record
 * carries more than once counts by its last copy, as Spring reads it (`Headers.lastHeader`), for
 * every header idd reads.
 */

/** A record's headers as a Kafka client hands them over: a header given more than once is an array. */
export type IHeaders = Record<string, Buffer | string | (Buffer | string)[] | undefined>;

export const HEADER_CORRELATION_ID = "kafka_correlationId";
export const HEADER_REPLY_TOPIC = "kafka_replyTopic";
export const HEADER_REPLY_PARTITION = "kafka_replyPartition";
/** Quarkus / SmallRye KafkaRequestReply's names (read when kafka_replyTopic is absent). */
export const SMALLRYE_CORRELATION_ID = "REPLY_CORRELATION_ID";
export const SMALLRYE_REPLY_TOPIC = "REPLY_TOPIC";
export const SMALLRYE_REPLY_PARTITION = "REPLY_PARTITION";
/** Every correlation header idd echoes, in the order a request's are read. */
export const CORRELATION_HEADERS = [HEADER_CORRELATION_ID, SMALLRYE_CORRELATION_ID] as const;
/**
 * Set on every reply for NestJS's ClientKafka: its observable completes only on a reply carrying
 * kafka_nest-is-disposed, and errors with what kafka_nest-err holds (idd's error as JSON).
 */
export const NEST_IS_DISPOSED = "kafka_nest-is-disposed";
export const NEST_ERR = "kafka_nest-err";
/** Set on error replies: the stable error code, for a Java `replyErrorChecker`. */
export const HEADER_ERROR_CODE = "idd_errorCode";
/** Set on dead-letter records. */
export const HEADER_DLQ_CODE = "idd_dlqCode";
export const HEADER_DLQ_REASON = "idd_dlqReason";
export const HEADER_DLQ_SOURCE = "idd_dlqSource";
/**
 * Set by a worker that forwards a request to its sequence's home partition: how often the request
 * was forwarded, in ASCII decimal (docs/wire-contract.md: Routing).
 */
export const HEADER_FORWARDS = "idd_forwards";

/** The last copy of a header (kafkajs gives an array for a header repeated). */
function last(v: IHeaders[string]): Buffer | undefined {
  const one = Array.isArray(v) ? v.at(-1) : v;
  if (one === undefined) return undefined;
  return typeof one === "string" ? Buffer.from(one, "utf8") : one;
}

export function headerBytes(h: IHeaders | undefined, name: string): Buffer | undefined {
  return h ? last(h[name]) : undefined;
}

export function headerString(h: IHeaders | undefined, name: string): string | undefined {
  return headerBytes(h, name)?.toString("utf8");
}

/**
 * kafka_replyPartition: 4 bytes big-endian (Spring), or ASCII digits; undefined when absent, NaN
 * when present but unreadable or negative. Four bytes that are all ASCII digits read as decimal: as a
 * big-endian int32 they would be at least 0x30303030 = 808,464,432, never a real partition.
 */
export function replyPartition(h: IHeaders | undefined, name: string = HEADER_REPLY_PARTITION): number | undefined {
  const b = headerBytes(h, name);
  if (!b || b.length === 0) return undefined;
  if (b.length <= 9 && allDigits(b)) return Number(b.toString("latin1"));
  if (b.length === 4 && b.readInt32BE(0) >= 0) return b.readInt32BE(0);
  return Number.NaN;
}

/** Whether every byte is an ASCII digit. */
function allDigits(b: Buffer): boolean {
  for (let i = 0; i < b.length; i++) {
    const c = b[i] as number;
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** All headers' names and values, in bytes (a header repeated counts each time). */
export function headersBytes(h: IHeaders | undefined): number {
  let n = 0;
  for (const k in h) {
    const v = h[k];
    n += Buffer.byteLength(k);
    if (Array.isArray(v)) for (const one of v) n += valueBytes(one);
    else n += valueBytes(v);
  }
  return n;
}

function valueBytes(v: Buffer | string | undefined): number {
  return v === undefined ? 0 : typeof v === "string" ? Buffer.byteLength(v) : v.length;
}

/** How often a request was forwarded between workers (idd_forwards); 0 when absent or unreadable. */
export function forwards(h: IHeaders | undefined): number {
  const n = Number(headerString(h, HEADER_FORWARDS));
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}
