/**
 * A fetched record batch that cannot be decoded — an unknown codec, a payload that fails to
 * decompress or inflates past the bound, a record its decoder throws on — must not stop the
 * partition. kafkajs decodes every batch of a fetch response in one pass and fails the whole fetch
 * on any of them, and its consumer then crashes on the same offset again and again: every request
 * behind that batch, and every partition that worker owns, waits.
 *
 * `readBatch` wraps kafkajs's batch decoder (`src/protocol/recordBatch/v0/decoder.js`, swapped in by
 * kafkajs-modules.ts): a batch it cannot decode becomes one record standing for the whole batch,
 * at the batch's last offset, carrying the batch's bytes and `unreadable` (which offsets, why).
 * The consumer hands it on like any record, so the partition moves past the batch, and whoever
 * reads it decides what to do (a worker dead-letters it: steps.ts). A batch cut short by the
 * fetch's size limit is not unreadable: kafkajs's own partial-batch error passes through.
 */
import type { Unreadable } from "./records.js";

/** What kafkajs's batch decoder reads from (its Decoder; only these are used here). */
interface FetchDecoder {
  buffer: Buffer;
  offset: number;
}

/** Where fields sit in a record batch (magic 2): baseOffset int64, batchLength int32, … */
const LENGTH_AT = 8;
const HEADER = 12; // baseOffset and batchLength: batchLength counts the bytes after them
const ATTRIBUTES_AT = 21;
const LAST_OFFSET_DELTA_AT = 23;
const FIRST_TIMESTAMP_AT = 27;
const MAX_TIMESTAMP_AT = 35;
const PRODUCER_ID_AT = 43;
const MIN_BATCH = 61; // up to and including the record count

const TIMESTAMP_TYPE_FLAG = 0x8;
const TRANSACTIONAL_FLAG = 0x10;
const CONTROL_FLAG = 0x20;
const CODECS = ["none", "gzip", "snappy", "lz4", "zstd"];

type BatchDecoder = (d: FetchDecoder) => Promise<object>;

/** kafkajs's batch decoder, with undecodable batches turned into one `unreadable` record. */
export function readBatch(original: BatchDecoder): BatchDecoder {
  return async (d) => {
    const start = d.offset;
    const skip = (batch: object) => {
      d.offset = start + HEADER + d.buffer.readInt32BE(start + LENGTH_AT);
      return batch;
    };
    // Codec ids 5 to 7 are none of Kafka's: kafkajs would read such a batch as uncompressed.
    const codec = start + MIN_BATCH <= d.buffer.length ? d.buffer.readInt16BE(start + ATTRIBUTES_AT) & 0x7 : 0;
    const unknown = codec >= CODECS.length && unreadableBatch(d.buffer, start, new Error(`unknown compression codec id ${codec}`));
    if (unknown) return skip(unknown);
    try {
      return await original(d);
    } catch (e) {
      if ((e as Error).name === "KafkaJSPartialMessageError") throw e;
      const batch = unreadableBatch(d.buffer, start, e as Error);
      if (!batch) throw e; // not even the batch header is readable: the fetch itself is broken
      return skip(batch);
    }
  };
}

/** The batch at `start` as kafkajs would hand it on, with one record standing for all of it; undefined without a whole header. */
export function unreadableBatch(buffer: Buffer, start: number, error: Error): object | undefined {
  if (start + MIN_BATCH > buffer.length) return undefined;
  const length = buffer.readInt32BE(start + LENGTH_AT);
  if (length < MIN_BATCH - HEADER || start + HEADER + length > buffer.length) return undefined;
  const firstOffset = buffer.readBigInt64BE(start);
  const attributes = buffer.readInt16BE(start + ATTRIBUTES_AT);
  const lastOffsetDelta = buffer.readInt32BE(start + LAST_OFFSET_DELTA_AT);
  const firstTimestamp = buffer.readBigInt64BE(start + FIRST_TIMESTAMP_AT).toString();
  const maxTimestamp = buffer.readBigInt64BE(start + MAX_TIMESTAMP_AT).toString();
  const codec = CODECS[attributes & 0x7] ?? `codec ${attributes & 0x7}`;
  const unreadable: Unreadable = {
    firstOffset: firstOffset.toString(),
    lastOffset: (firstOffset + BigInt(Math.max(0, lastOffsetDelta))).toString(),
    codec,
    reason: `${error.name === "Error" ? "" : `${error.name}: `}${error.message}`.slice(0, 500),
  };
  const context = {
    firstOffset: unreadable.firstOffset,
    firstTimestamp,
    maxTimestamp,
    lastOffsetDelta,
    producerId: buffer.readBigInt64BE(start + PRODUCER_ID_AT).toString(),
    inTransaction: (attributes & TRANSACTIONAL_FLAG) !== 0,
    isControlBatch: (attributes & CONTROL_FLAG) !== 0,
    timestampType: (attributes & TIMESTAMP_TYPE_FLAG) !== 0 ? 1 : 0,
    magicByte: 2,
  };
  const record = {
    magicByte: 2,
    attributes: 0,
    timestamp: maxTimestamp,
    offset: unreadable.lastOffset,
    key: null,
    value: buffer.subarray(start, start + HEADER + length),
    headers: {},
    isControlRecord: false,
    batchContext: context,
    unreadable,
  };
  return { ...context, records: [record] };
}
