/**
 * One record of a produce request, encoded into one buffer of its exact size: in place of kafkajs's
 * `src/protocol/recordBatch/record/v0/index.js`, which makes two zero-filled 512-byte encoders per
 * record with one header, and a small buffer for every length it writes. The bytes are the same
 * (record-encoder.test.ts compares them); records of shapes idd does not send (timestamps far apart,
 * values that are neither strings nor buffers) are left to kafkajs's own encoder.
 *
 * Record (v0): length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
 * key and value as varint length + bytes (-1: null), headers as varint count + (key, value) pairs.
 */

/** What kafkajs's record/v0 module is called with. */
export interface RecordInput {
  offsetDelta?: number;
  timestampDelta?: number;
  key?: unknown;
  value?: unknown;
  headers?: unknown;
}

/** What the record batch reads of an encoded record: kafkajs's Encoder has `buf` and `buffer` too. */
export class EncodedRecord {
  readonly buf: Buffer;
  readonly offset: number;

  constructor(buf: Buffer) {
    this.buf = buf;
    this.offset = buf.length;
  }

  get buffer(): Buffer {
    return this.buf;
  }

  size(): number {
    return this.offset;
  }
}

/** Zigzag of a 32-bit int, as kafkajs writes varints (its loop reads the result unsigned). */
const zigzag = (v: number) => (v << 1) ^ (v >> 31);

function uvarintSize(v: number): number {
  let n = 1;
  while ((v & 0xffffff80) !== 0) {
    n++;
    v >>>= 7;
  }
  return n;
}

function writeUVarInt(buf: Buffer, at: number, v: number): number {
  while ((v & 0xffffff80) !== 0) {
    buf[at++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buf[at++] = v & 0x7f;
  return at;
}

/** Byte length of a key, value or header value; -1 for null; undefined for a type left to kafkajs. */
function bytesOf(v: unknown, nullable: boolean): number | undefined {
  if (Buffer.isBuffer(v)) return v.length;
  if (typeof v === "string") return Buffer.byteLength(v, "utf8");
  return nullable && v == null ? -1 : undefined;
}

/** Bytes of a varint length and what follows it. */
const varBytesSize = (length: number) => uvarintSize(zigzag(length)) + Math.max(0, length);

function writeBytes(buf: Buffer, at: number, v: unknown, length: number): number {
  at = writeUVarInt(buf, at, zigzag(length));
  if (length <= 0) return at;
  if (typeof v === "string") buf.write(v, at, length, "utf8");
  else (v as Buffer).copy(buf, at);
  return at + length;
}

/**
 * Encodes one record, or returns undefined when its shape is one kafkajs's encoder should handle
 * (kafkajs's defaults apply: offsetDelta and timestampDelta 0, headers {}).
 */
export function encodeRecord({ offsetDelta = 0, timestampDelta = 0, key, value, headers = {} }: RecordInput): EncodedRecord | undefined {
  // Deltas whose zigzag fits 32 bits are written alike as varint and varlong.
  if (!Number.isInteger(timestampDelta) || Math.abs(timestampDelta) >= 2 ** 30) return undefined;
  if (!Number.isInteger(offsetDelta) || Math.abs(offsetDelta) >= 2 ** 30) return undefined;
  if (headers === null || typeof headers !== "object" || Array.isArray(headers)) return undefined;
  const keyLength = bytesOf(key, true);
  const valueLength = bytesOf(value, true);
  if (keyLength === undefined || valueLength === undefined) return undefined;
  const h = headers as Record<string, unknown>;
  let count = 0;
  let headerBytes = 0;
  for (const k in h) {
    if (!Object.hasOwn(h, k)) continue;
    const kSize = varBytesSize(Buffer.byteLength(k, "utf8"));
    const v = h[k];
    const values = Array.isArray(v) ? v : undefined;
    for (let i = 0, n = values ? values.length : 1; i < n; i++) {
      const vLength = bytesOf(values ? values[i] : v, false);
      if (vLength === undefined) return undefined;
      count++;
      headerBytes += kSize + varBytesSize(vLength);
    }
  }
  const body =
    1 +
    uvarintSize(zigzag(timestampDelta)) +
    uvarintSize(zigzag(offsetDelta)) +
    varBytesSize(keyLength) +
    varBytesSize(valueLength) +
    uvarintSize(zigzag(count)) +
    headerBytes;
  const buf = Buffer.allocUnsafe(uvarintSize(zigzag(body)) + body);
  let at = writeUVarInt(buf, 0, zigzag(body));
  buf[at++] = 0; // attributes
  at = writeUVarInt(buf, at, zigzag(timestampDelta));
  at = writeUVarInt(buf, at, zigzag(offsetDelta));
  at = writeBytes(buf, at, key, keyLength);
  at = writeBytes(buf, at, value, valueLength);
  at = writeUVarInt(buf, at, zigzag(count));
  for (const k in h) {
    if (!Object.hasOwn(h, k)) continue;
    const kLength = Buffer.byteLength(k, "utf8");
    const v = h[k];
    const values = Array.isArray(v) ? v : undefined;
    for (let i = 0, n = values ? values.length : 1; i < n; i++) {
      const one = values ? values[i] : v;
      at = writeBytes(buf, at, k, kLength);
      at = writeBytes(buf, at, one, bytesOf(one, false) as number);
    }
  }
  return new EncodedRecord(buf);
}
