/**
 * One fetched record decoded: in place of kafkajs's `src/protocol/recordBatch/record/v0/decoder.js`,
 * which per record turns the batch's first offset and timestamp from strings into 64-bit values,
 * reads the timestamp delta through a dozen of them, and copies the headers object once per header.
 * Here offsets and timestamps that are safe integers are added as numbers (the strings are the
 * same), and the headers object is built once. Records whose timestamp delta takes more than four
 * bytes, or batches whose offsets or timestamps are beyond 2^53, are left to kafkajs's decoder.
 * record-decoder.test.ts compares the two.
 */

/** What kafkajs's decoders read from (its Decoder, of which only these are used). */
export interface KafkaDecoder {
  buffer: Buffer;
  offset: number;
  readInt8(): number;
  readVarInt(): number;
  readVarIntBytes(): Buffer | null;
  readVarIntString(): string | null;
}

/** The batch a record belongs to, as kafkajs's batch decoder passes it. */
export interface BatchContext {
  firstOffset?: string;
  firstTimestamp?: string;
  magicByte?: number;
  isControlBatch?: boolean;
  timestampType?: number;
  maxTimestamp?: string;
}

/** kafkajs's TimestampTypes.LOG_APPEND_TIME. */
const LOG_APPEND_TIME = 1;

/** The batch's first offset and timestamp as numbers (undefined: not safe integers), once per batch. */
const firsts = new WeakMap<BatchContext, { offset: number; timestamp: number } | undefined>();

function firstsOf(ctx: BatchContext): { offset: number; timestamp: number } | undefined {
  if (firsts.has(ctx)) return firsts.get(ctx);
  const offset = Number(ctx.firstOffset);
  const timestamp = Number(ctx.firstTimestamp);
  const safe = /^-?\d+$/.test(String(ctx.firstOffset)) && /^-?\d+$/.test(String(ctx.firstTimestamp));
  const f = safe && Number.isSafeInteger(offset) && Number.isSafeInteger(timestamp) ? { offset, timestamp } : undefined;
  firsts.set(ctx, f);
  return f;
}

/** A zigzag varlong of at most four bytes (|value| < 2^27), or undefined (the offset is then unchanged). */
function readShortVarLong(d: KafkaDecoder): number | undefined {
  let at = d.offset;
  let v = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    const b = d.buffer[at++];
    if (b === undefined) return undefined;
    v |= (b & 0x7f) << shift;
    if (b < 0x80) {
      d.offset = at;
      return (v >>> 1) ^ -(v & 1);
    }
  }
  return undefined;
}

/** A record as kafkajs hands it on; undefined when it is left to kafkajs (nothing of it was read then). */
export function decodeRecord(d: KafkaDecoder, ctx: BatchContext = {}): object | undefined {
  const f = firstsOf(ctx);
  if (!f) return undefined;
  const start = d.offset;
  const attributes = d.readInt8();
  const timestampDelta = readShortVarLong(d);
  if (timestampDelta === undefined) {
    d.offset = start;
    return undefined;
  }
  const { magicByte, isControlBatch = false, timestampType, maxTimestamp } = ctx;
  const timestamp = timestampType === LOG_APPEND_TIME && maxTimestamp ? maxTimestamp : String(f.timestamp + timestampDelta);
  const offset = String(f.offset + d.readVarInt());
  const key = d.readVarIntBytes();
  const value = d.readVarIntBytes();
  const count = d.readVarInt();
  if (count < -1) {
    d.offset = start; // kafkajs fails on it in its own way
    return undefined;
  }
  const headers: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) {
    const k = d.readVarIntString() as string;
    const v = d.readVarIntBytes();
    // As kafkajs: a name seen before becomes an array; what the name reads (inherited too) counts.
    const prev = headers[k];
    const next = prev === undefined ? v : Array.isArray(prev) ? prev.concat([v]) : [prev, v];
    if (k === "__proto__") Object.defineProperty(headers, k, { value: next, enumerable: true, writable: true, configurable: true });
    else headers[k] = next;
  }
  return { magicByte, attributes, timestamp, offset, key, value, headers, isControlRecord: isControlBatch, batchContext: ctx };
}
