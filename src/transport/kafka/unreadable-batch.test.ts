// The seam first, as a worker loads it: kafkajs is loaded through it, with every codec.
import "./index.js";
import { createRequire } from "node:module";
import { gzipSync } from "node:zlib";
import { expect, test } from "vitest";
import { CODEC_IDS, CODEC_NAMES, CODECS, type CodecName, compressionProblem, MAX_DECOMPRESSED_BYTES, unzstd } from "./codecs.js";
import type { InRecord } from "./records.js";

const require = createRequire(import.meta.url);
type Encoded = { buffer: Buffer };
const { RecordBatch } = require("kafkajs/src/protocol/recordBatch/v0/index.js") as { RecordBatch: (o: object) => Promise<Encoded> };
const Record = require("kafkajs/src/protocol/recordBatch/record/v0/index.js") as (o: object) => Encoded;
const Decoder = require("kafkajs/src/protocol/decoder.js") as new (b: Buffer) => unknown;
const decodeMessages = require("kafkajs/src/protocol/requests/fetch/v4/decodeMessages.js") as (d: unknown) => Promise<InRecord[]>;

const values = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `{"sequence":"order","requestId":"r${from + i}","count":1}`);

/** A record batch at `firstOffset` of `vs`, written by kafkajs's encoder with `codec`. */
async function batch(codec: CodecName, firstOffset: number, vs: string[]): Promise<Buffer> {
  const records = vs.map((v, i) => Record({ offsetDelta: i, timestampDelta: 0, key: "order", value: v, headers: { h: "x" } }));
  const e = await RecordBatch({ compression: CODEC_IDS[codec], firstOffset: BigInt(firstOffset), lastOffsetDelta: vs.length - 1, records });
  return e.buffer;
}

/** The records a fetch response with these batches (as the broker sends them, back to back) decodes to. */
async function fetched(...batches: Buffer[]): Promise<InRecord[]> {
  const all = Buffer.concat(batches);
  const size = Buffer.alloc(4);
  size.writeInt32BE(all.length);
  return decodeMessages(new Decoder(Buffer.concat([size, all])));
}

/** `b` with its codec bits set to `id` (the CRC is not checked by kafkajs, nor here). */
function withCodec(b: Buffer, id: number): Buffer {
  const c = Buffer.from(b);
  c.writeInt16BE((c.readInt16BE(21) & ~7) | id, 21);
  return c;
}

test.each(CODEC_NAMES.map((c) => [c]))("a batch compressed with %s decodes to its records", async (codec) => {
  if (compressionProblem(codec)) return; // zstd before Node 22.15: the frame below stands in for its reading
  const vs = values(300);
  const records = await fetched(await batch(codec, 10, vs));
  expect(records.map((r) => r.value?.toString())).toEqual(vs);
  expect(records.map((r) => r.offset)).toEqual(vs.map((_, i) => String(10 + i)));
  expect(records.every((r) => r.unreadable === undefined && r.key?.toString() === "order")).toBe(true);
});

test.each(CODEC_NAMES.filter((c) => c !== "none").map((c) => [c]))("%s round-trips large and incompressible data", async (codec) => {
  if (compressionProblem(codec)) return; // zstd compression before Node 22.15: reading is tested above with zlib's absence
  const c = CODECS[codec as Exclude<CodecName, "none">];
  const random = Buffer.from(Array.from({ length: 200_000 }, (_, i) => (i * 2654435761) >>> 24));
  const repetitive = Buffer.from("abcdefgh".repeat(50_000));
  // Buffer.equals, not toEqual: a deep compare of 400 KB took vitest about 1.8 s per codec.
  for (const data of [random, repetitive, Buffer.alloc(0), Buffer.from("x")]) {
    const back = await c.decompress(await c.compress(data));
    expect({ length: back.length, equal: back.equals(data) }).toEqual({ length: data.length, equal: true });
  }
});

test("zstd reads a frame another encoder wrote, with zlib where Node has it and in JavaScript everywhere", async () => {
  const frame = Buffer.from("KLUv/WDQAc0AAJBpZGQgenN0ZCBmaXh0dXJlOiABAHZVNcM=", "base64"); // zstd 1.5 (Node 24's zlib)
  const text = "idd zstd fixture: ".repeat(40);
  expect((await CODECS.zstd.decompress(frame)).toString()).toBe(text);
  expect(unzstd(frame).toString()).toBe(text);
  expect(() => unzstd(frame.subarray(0, 20))).toThrow();
});

test("snappy reads snappy-java's framing (Java producers) as well as raw blocks", async () => {
  const data = Buffer.from("idd ".repeat(5000));
  const raw = await CODECS.snappy.compress(data);
  const header = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1]);
  const half = await CODECS.snappy.compress(data.subarray(0, 10_000));
  const rest = await CODECS.snappy.compress(data.subarray(10_000));
  const len = (b: Buffer) => Buffer.from([b.length >>> 24, (b.length >>> 16) & 255, (b.length >>> 8) & 255, b.length & 255]);
  const framed = Buffer.concat([header, len(half), half, len(rest), rest]);
  expect(await CODECS.snappy.decompress(framed)).toEqual(data);
  expect(await CODECS.snappy.decompress(raw)).toEqual(data);
});

test("lz4 writes Kafka's frame: independent blocks of at most 64 KiB", async () => {
  const frame = await CODECS.lz4.compress(Buffer.alloc(200_000, 7));
  expect(frame.readUInt32LE(0)).toBe(0x184d2204);
  expect(frame[4]).toBe(0x60); // version 01, blocks independent, no checksums
  expect(frame[5]).toBe(0x40); // 64 KiB blocks
});

test("a batch that cannot be decoded stands as one unreadable record; the batches around it decode", async () => {
  const before = await batch("none", 0, values(3));
  const good = await batch("lz4", 5, values(2, 5));
  const cases: [string, Buffer, RegExp][] = [
    ["an unknown codec", withCodec(await batch("none", 3, values(2, 3)), 6), /codec 6|not implemented|unknown/i],
    ["a corrupt snappy payload", withCodec(await batch("gzip", 3, values(2, 3)), CODEC_IDS.snappy), /snappy|invalid/i],
    ["a corrupt zstd payload", withCodec(await batch("gzip", 3, values(2, 3)), CODEC_IDS.zstd), /./],
    ["a corrupt lz4 payload", withCodec(await batch("gzip", 3, values(2, 3)), CODEC_IDS.lz4), /./],
  ];
  for (const [what, bad, reason] of cases) {
    const records = await fetched(before, bad, good);
    expect(
      records.map((r) => r.offset),
      what,
    ).toEqual(["0", "1", "2", "4", "5", "6"]);
    const u = records[3]?.unreadable;
    expect(u, what).toMatchObject({ firstOffset: "3", lastOffset: "4" });
    expect(u?.reason, what).toMatch(reason);
    expect(records[3]?.value, what).toEqual(bad);
    expect(records.filter((r) => r.unreadable).length, what).toBe(1);
  }
});

test("a batch that would inflate past the bound is unreadable, not a worker out of memory", async () => {
  const bomb = gzipSync(Buffer.alloc(MAX_DECOMPRESSED_BYTES + 1024));
  const b = await batch("gzip", 0, values(1));
  // The batch's records part: count (4 bytes) then the compressed payload, from byte 61 on.
  const body = Buffer.concat([b.subarray(0, 61), bomb]);
  body.writeInt32BE(body.length - 12, 8);
  const records = await fetched(body);
  expect(records).toHaveLength(1);
  expect(records[0]?.unreadable?.reason).toMatch(/exceeds|larger than|buffer/i);
});

test("a batch cut short by the fetch's size limit is left for the next fetch, as kafkajs does", async () => {
  const whole = await batch("none", 0, values(2));
  const cut = (await batch("snappy", 2, values(50, 2))).subarray(0, 40);
  const records = await fetched(whole, cut);
  expect(records.map((r) => r.offset)).toEqual(["0", "1"]);
});
