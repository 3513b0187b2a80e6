/**
 * One fetched record decoded: in place of kafkajs's `src/protocol/recordBatch/record/v0/decoder.js`,
 * which per record turns the batch's first offset and timestamp from strings into 64-bit values,
 * reads the timestamp delta through a dozen of them, and copies the headers object once per header.
 * Here offsets and timestamps that are safe integers are added as numbers (the strings are the
 * same; a timestamp delta of more than four bytes, or a batch beyond 2^53, takes BigInts), and the
 * headers object is built once, in time linear in the headers (kafkajs's copies it per header: a
 * record repeating one header name 100,000 times held a worker for 19 s). Only records kafkajs
 * fails on, or batches without decimal first offset and timestamp, are left to kafkajs's decoder.
 * record-decoder.test.ts compares the two.
 */

/** What kafkajs's decoders read from (its Decoder, of which only these are used). */
export interface KafkaDecoder {
  buffer: Buffer;
  offset: number;
  readInt8(): number;
  readVarInt(): number;
  /** A 64-bit value (kafkajs's Long), of which only its decimal string is used. */
  readVarLong(): { toString(): string };
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

/**
 * The batch's first offset and timestamp, once per batch: as numbers when they are safe integers
 * (`small`), and as the decimal strings they are (undefined when not: kafkajs's decoder decides).
 */
interface Firsts {
  offset: string;
  timestamp: string;
  small: { offset: number; timestamp: number } | undefined;
}
const firsts = new WeakMap<BatchContext, Firsts | undefined>();
const DECIMAL = /^-?\d+$/;

function firstsOf(ctx: BatchContext): Firsts | undefined {
  if (firsts.has(ctx)) return firsts.get(ctx);
  const { firstOffset: offset, firstTimestamp: timestamp } = ctx;
  let f: Firsts | undefined;
  if (offset !== undefined && timestamp !== undefined && DECIMAL.test(offset) && DECIMAL.test(timestamp)) {
    const small = { offset: Number(offset), timestamp: Number(timestamp) };
    f = { offset, timestamp, small: Number.isSafeInteger(small.offset) && Number.isSafeInteger(small.timestamp) ? small : undefined };
  }
  firsts.set(ctx, f);
  return f;
}

/** `first + delta` in decimal, as kafkajs's Long (a BigInt inside, never wrapping) gives it. */
const plus = (first: string, delta: bigint | number) => String(BigInt(first) + BigInt(delta));

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
  const { magicByte, isControlBatch = false, timestampType, maxTimestamp } = ctx;
  const appended = timestampType === LOG_APPEND_TIME && maxTimestamp;
  const short = f.small && readShortVarLong(d);
  let timestamp: string;
  let offset: string;
  if (f.small && short !== undefined) {
    timestamp = appended ? maxTimestamp : String(f.small.timestamp + short);
    offset = String(f.small.offset + d.readVarInt());
  } else {
    const delta = BigInt(d.readVarLong().toString());
    timestamp = appended ? maxTimestamp : plus(f.timestamp, delta);
    offset = plus(f.offset, d.readVarInt());
  }
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
    // An array here is always one this loop made (no inherited property is one): appended in place,
    // so a record repeating one name 100,000 times decodes in linear time (concat took 19 s).
    const prev = headers[k];
    if (Array.isArray(prev)) {
      prev.push(v);
      continue;
    }
    const next = prev === undefined ? v : [prev, v];
    if (k === "__proto__") Object.defineProperty(headers, k, { value: next, enumerable: true, writable: true, configurable: true });
    else headers[k] = next;
  }
  return { magicByte, attributes, timestamp, offset, key, value, headers, isControlRecord: isControlBatch, batchContext: ctx };
}
