/**
 * Avro for the wire contract: the schemas in schemas/, with every Avro `long` read and written as a
 * BigInt (I6: numbers above 2^53 stay exact), and the Confluent framing (magic byte 0, 4-byte
 * big-endian schema id, Avro binary).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import avro from "avsc";
import { IddError } from "../core/errors.js";
import { PACKAGE_ROOT } from "../core/package-root.js";

const MIN_LONG = -(2n ** 63n);
const MAX_LONG = 2n ** 63n - 1n;
/** avsc packs the 8 bytes toBuffer returns at once and never keeps them: one buffer serves every long. */
const longBytes = Buffer.alloc(8);

/** Avro `long` as BigInt: exact over the whole 64-bit range. */
const bigintLong = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer) => buf.readBigInt64LE(),
  toBuffer: (n: bigint) => {
    longBytes.writeBigInt64LE(n);
    return longBytes;
  },
  fromJSON: (v: unknown) => BigInt(v as string | number),
  toJSON: (n: bigint) => Number(n),
  isValid: (n: unknown) => typeof n === "bigint" && n >= MIN_LONG && n <= MAX_LONG,
  compare: (a: bigint, b: bigint) => (a === b ? 0 : a < b ? -1 : 1),
});

export function avroType(schema: string | object): avro.Type {
  return avro.Type.forSchema(typeof schema === "string" ? (JSON.parse(schema) as avro.Schema) : (schema as avro.Schema), {
    registry: { long: bigintLong },
    // Also `{"type": "long", ...}` (e.g. with a logicalType), which the registry entry does not reach.
    typeHook: (s: avro.Schema) => (typeof s === "object" && (s as { type?: unknown }).type === "long" ? bigintLong : undefined),
  });
}

export const SCHEMA_DIR = join(PACKAGE_ROOT, "schemas");
export const requestSchemaText = readFileSync(join(SCHEMA_DIR, "IdRequest.avsc"), "utf8");
export const replySchemaText = readFileSync(join(SCHEMA_DIR, "IdReply.avsc"), "utf8");
export const requestType = avroType(requestSchemaText);
export const replyType = avroType(replySchemaText);

export const MAGIC_BYTE = 0;

/** Room for a typical framed reply; a larger value is encoded again into a buffer of its size. */
const FRAME_GUESS = 256;

/** The Confluent frame of `value`, encoded straight after the header (no second buffer, no copy). */
export function frame(schemaId: number, type: avro.Type, value: unknown): Buffer {
  let out = Buffer.allocUnsafe(FRAME_GUESS);
  let end = type.encode(value, out, 5);
  if (end < 0) {
    // encode returns minus the bytes missing.
    out = Buffer.allocUnsafe(out.length - end);
    end = type.encode(value, out, 5);
  }
  out.writeUInt8(MAGIC_BYTE, 0);
  out.writeUInt32BE(schemaId, 1);
  return out.subarray(0, end);
}

/** Splits a Confluent-framed value into its schema id and Avro body; throws BAD_FRAME when it is not one. */
export function unframe(value: Buffer): { schemaId: number; body: Buffer } {
  if (value.length < 5 || value[0] !== MAGIC_BYTE) {
    throw new IddError(
      "BAD_FRAME",
      `value is neither JSON nor Confluent-framed Avro (first byte ${value[0] ?? "none"}, ${value.length} bytes)`,
    );
  }
  return { schemaId: value.readUInt32BE(1), body: value.subarray(5) };
}
