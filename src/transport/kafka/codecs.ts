/**
 * Every compression codec Kafka defines, for kafkajs, which brings gzip only and throws on the
 * others: a producer with snappy, lz4 or zstd (franz-go's default is snappy; Java services often
 * set lz4 or zstd) would otherwise stop every consumer that fetches its batches. Pure JavaScript
 * where Node has no codec of its own, so nothing is downloaded or built at install:
 *
 * - gzip: Node's zlib (as kafkajs's own, with the output bounded);
 * - snappy: snappyjs, raw blocks, and the xerial framing Java's snappy-java writes;
 * - lz4: lz4js blocks in LZ4 frames (Kafka's format since message format v1) of 64 KiB
 *   independent blocks, as Kafka's own KafkaLZ4BlockOutputStream writes them;
 * - zstd: Node's zlib where it has zstd (22.15 and later), else fzstd to read (writing zstd then
 *   is refused with a clear reason: `compressionProblem`).
 *
 * Decompressed output is bounded by MAX_DECOMPRESSED_BYTES: a small batch that would inflate past
 * it fails to decode, and the consumer skips it (unreadable-batch.ts) instead of running out of
 * memory.
 */
import { promisify } from "node:util";
import zlib from "node:zlib";
import { Decompress as ZstdStream } from "fzstd";
import lz4 from "lz4js";
import lz4xxh from "lz4js/xxh32.js";
import snappy from "snappyjs";

/** The codecs by name, as a setting names them; "none" sends uncompressed. */
export const CODEC_NAMES = ["none", "gzip", "snappy", "lz4", "zstd"] as const;
export type CodecName = (typeof CODEC_NAMES)[number];

/** Kafka's codec ids (the low 3 bits of a record batch's attributes). */
export const CODEC_IDS: Record<CodecName, number> = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 };

/** What one batch may decompress to: far above any batch a producer writes (1 MiB by default). */
export const MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024;

interface Codec {
  compress(data: Buffer): Promise<Buffer>;
  decompress(data: Buffer): Promise<Buffer>;
}

const zstdInZlib = typeof (zlib as { zstdDecompress?: unknown }).zstdDecompress === "function";

/** Why `name` cannot compress what idd writes on this Node, or undefined when it can. */
export function compressionProblem(name: CodecName): string | undefined {
  if (name === "zstd" && !zstdInZlib)
    return `zstd compression needs Node.js 22.15 or later (this is ${process.version}); reading zstd works on every line`;
  return undefined;
}

const tooLarge = () => new Error(`decompressed batch exceeds ${MAX_DECOMPRESSED_BYTES} bytes`);
const asBuffer = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength);
const bounded = { maxOutputLength: MAX_DECOMPRESSED_BYTES };

const gzip: Codec = {
  compress: (data) => promisify(zlib.gzip)(data),
  decompress: (data) => promisify(zlib.unzip)(data, bounded),
};

/** snappy-java's stream header: magic (8 bytes), version and compatible version (4 bytes each). */
const XERIAL = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);

function unsnappy(data: Buffer): Buffer {
  if (data.length < 16 || !data.subarray(0, 8).equals(XERIAL)) return asBuffer(snappy.uncompress(data, MAX_DECOMPRESSED_BYTES));
  const chunks: Buffer[] = [];
  let total = 0;
  for (let at = 16; at < data.length; ) {
    if (at + 4 > data.length) throw new Error("truncated snappy-java chunk length");
    const size = data.readInt32BE(at);
    if (size < 0 || at + 4 + size > data.length) throw new Error("truncated snappy-java chunk");
    const chunk = asBuffer(snappy.uncompress(data.subarray(at + 4, at + 4 + size), MAX_DECOMPRESSED_BYTES - total));
    total += chunk.length;
    chunks.push(chunk);
    at += 4 + size;
  }
  return Buffer.concat(chunks, total);
}

const snappyCodec: Codec = {
  compress: async (data) => asBuffer(snappy.compress(data)),
  decompress: async (data) => unsnappy(data),
};

const LZ4_MAGIC = 0x184d2204;
const LZ4_BLOCK = 64 * 1024;
/** Frame descriptor: version 01, blocks independent; block maximum 64 KiB. */
const LZ4_FLG = 0x60;
const LZ4_BD = 0x40;

/** An LZ4 frame of independent 64 KiB blocks (each compressed with a table of its own). */
function lz4Frame(data: Buffer): Buffer {
  const out = Buffer.alloc(7 + lz4.compressBound(data.length) + 4 * Math.ceil(data.length / LZ4_BLOCK) + 4);
  out.writeUInt32LE(LZ4_MAGIC, 0);
  out[4] = LZ4_FLG;
  out[5] = LZ4_BD;
  out[6] = (lz4xxh.hash(0, out, 4, 2) >> 8) & 0xff;
  let at = 7;
  const block = new Uint8Array(lz4.compressBound(LZ4_BLOCK));
  for (let from = 0; from < data.length; from += LZ4_BLOCK) {
    const size = Math.min(LZ4_BLOCK, data.length - from);
    const packed = lz4.compressBlock(data, block, from, size, new Uint32Array(1 << 16));
    if (packed === 0 || packed >= size) {
      out.writeUInt32LE((0x80000000 | size) >>> 0, at);
      data.copy(out, at + 4, from, from + size);
      at += 4 + size;
    } else {
      out.writeUInt32LE(packed, at);
      out.set(block.subarray(0, packed), at + 4);
      at += 4 + packed;
    }
  }
  out.writeUInt32LE(0, at); // end mark
  return out.subarray(0, at + 4);
}

function unlz4(data: Buffer): Buffer {
  const bound = lz4.decompressBound(data);
  if (bound > MAX_DECOMPRESSED_BYTES) throw tooLarge();
  return asBuffer(lz4.decompress(data, bound));
}

const lz4Codec: Codec = {
  compress: async (data) => lz4Frame(data),
  decompress: async (data) => unlz4(data),
};

/** zstd read in JavaScript (fzstd), bounded: where Node's zlib has no zstd. */
export function unzstd(data: Buffer): Buffer {
  const chunks: Uint8Array[] = [];
  let total = 0;
  const stream = new ZstdStream((chunk) => {
    total += chunk.length;
    if (total > MAX_DECOMPRESSED_BYTES) throw tooLarge();
    chunks.push(chunk);
  });
  stream.push(data, true);
  return Buffer.concat(chunks, total);
}

type ZstdZlib = { zstdCompress: typeof zlib.gzip; zstdDecompress: typeof zlib.unzip };
const zstdCodec: Codec = zstdInZlib
  ? {
      compress: (data) => promisify((zlib as unknown as ZstdZlib).zstdCompress)(data),
      decompress: (data) => promisify((zlib as unknown as ZstdZlib).zstdDecompress)(data, bounded),
    }
  : {
      compress: async () => {
        throw new Error(compressionProblem("zstd"));
      },
      decompress: async (data) => unzstd(data),
    };

export const CODECS: Record<Exclude<CodecName, "none">, Codec> = { gzip, snappy: snappyCodec, lz4: lz4Codec, zstd: zstdCodec };

/** kafkajs's codec registry: per codec id, a function returning { compress(encoder), decompress(buffer) }. */
type KafkajsCodecs = Record<
  number,
  () => { compress(encoder: { buffer: Buffer }): Promise<Buffer>; decompress(b: Buffer): Promise<Buffer> }
>;

/** Puts every codec in kafkajs's registry (its documented extension point), in place of its own and its refusals (kafkajs-modules.ts `loadKafkajs`). */
export function registerCodecs(kafkajs: object): void {
  const registry = (kafkajs as { CompressionCodecs: KafkajsCodecs }).CompressionCodecs;
  for (const [name, codec] of Object.entries(CODECS)) {
    const kafkajsCodec = { compress: (e: { buffer: Buffer }) => codec.compress(e.buffer), decompress: (b: Buffer) => codec.decompress(b) };
    registry[CODEC_IDS[name as CodecName]] = () => kafkajsCodec;
  }
}
