/**
 * What a worker sends for one request record: a reply (numbers, or an error with a stable code)
 * on the request's reply address, or — when no reply address is known — a dead-letter record
 * carrying the original record and the reason. Never throws for bad input.
 */
import {
  HEADER_DLQ_CODE,
  HEADER_DLQ_REASON,
  HEADER_DLQ_SOURCE,
  HEADER_ERROR_CODE,
  headersBytes,
  NEST_ERR,
  NEST_IS_DISPOSED,
} from "../protocol/headers.js";
import { encodeReply, type IdReply } from "../protocol/reply.js";
import type { ReplyAddress, WireFormat } from "../protocol/request.js";
import type { InRecord, OutRecord } from "../transport/kafka/index.js";

/** Dead-lettered values are kept whole up to this size, so nothing is lost on bad input. */
const DLQ_MAX_VALUE = 1_000_000;

/** NestJS's value of kafka_nest-is-disposed (one zero byte); it reads only whether the header is there. */
const DISPOSED = Buffer.alloc(1);

export function replyRecord(
  reply: IdReply,
  address: ReplyAddress,
  key: Buffer | null,
  format: WireFormat,
  replySchemaId: number,
): OutRecord {
  const headers: Record<string, Buffer | string> = { ...address.correlation, [NEST_IS_DISPOSED]: DISPOSED };
  if (reply.error) {
    headers[HEADER_ERROR_CODE] = reply.error.code;
    headers[NEST_ERR] = JSON.stringify(reply.error);
  }
  // One shape for every reply, partition or not: the producer copies these records per send.
  return { topic: address.topic, partition: address.partition, key, value: encodeReply(reply, format, replySchemaId), headers };
}

/**
 * The dead-letter record for a request: its key, value and headers, with the code and reason.
 * `minimal` leaves out the value and the original headers, saying so (idd_dlqTruncatedFrom,
 * idd_dlqHeadersDropped): sent when the dead-letter topic refused the full record (a request
 * near the broker's size limit plus idd's headers can be over it).
 */
export function deadLetter(
  error: { code: string; message: string },
  record: InRecord,
  source: { topic: string; partition: number },
  dlqTopic: string,
  minimal = false,
): OutRecord {
  const headers: OutRecord["headers"] = {};
  if (minimal) {
    headers.idd_dlqHeadersDropped = `${Object.keys(record.headers).length} headers, ${headersBytes(record.headers)} bytes`;
  } else {
    // Every copy of a header given more than once, in its order: the record as it came.
    for (const [k, v] of Object.entries(record.headers)) if (v !== undefined) headers[k] = v;
  }
  const value = record.value ?? Buffer.alloc(0);
  const keep = minimal ? 0 : DLQ_MAX_VALUE;
  headers[HEADER_DLQ_CODE] = error.code;
  headers[HEADER_DLQ_REASON] = error.message.slice(0, 1000);
  headers[HEADER_DLQ_SOURCE] = `${source.topic}/${source.partition}/${record.offset}`;
  // A batch that could not be decoded: its value is the batch as fetched, standing for these offsets.
  if (record.unreadable) headers.idd_dlqOffsets = `${record.unreadable.firstOffset}-${record.unreadable.lastOffset}`;
  if (value.length > keep) headers.idd_dlqTruncatedFrom = String(value.length);
  const key = record.key && record.key.length > 1024 ? record.key.subarray(0, 1024) : record.key;
  return { topic: dlqTopic, key, value: value.subarray(0, keep), headers };
}
