import { createRequire } from "node:module";
import fc from "fast-check";
import { expect, test } from "vitest";
import { type BatchContext, decodeRecord, type KafkaDecoder } from "./record-decoder.js";

const require = createRequire(import.meta.url);
const PATH = require.resolve("kafkajs/src/protocol/recordBatch/record/v0/decoder.js");
/** kafkajs's own, read from its files whatever the require cache holds. */
const fresh = <T>(path: string): T => {
  const cached = require.cache[path];
  delete require.cache[path];
  try {
    return require(path) as T;
  } finally {
    if (cached) require.cache[path] = cached;
  }
};
const original = fresh<(d: KafkaDecoder, ctx?: BatchContext) => object>(PATH);
const encode = fresh<(r: object) => { buffer: Buffer }>(require.resolve("kafkajs/src/protocol/recordBatch/record/v0/index.js"));
const Decoder = require("kafkajs/src/protocol/decoder.js") as new (b: Buffer) => KafkaDecoder;

/** A record's bytes as a batch holds them (without the length in front). */
function body(r: object): Buffer {
  const b = encode(r).buffer;
  let i = 0;
  while ((b[i] as number) & 0x80) i++;
  return b.subarray(i + 1);
}

const bytes = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)),
);
const headerName = fc.oneof(
  fc.constantFrom("__proto__", "constructor", "toString", "a", "b", "kafka_replyTopic"),
  fc.string({ maxLength: 5 }),
);
const record = fc.record({
  offsetDelta: fc.oneof(fc.nat(1000), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })),
  timestampDelta: fc.oneof(fc.integer({ min: -5000, max: 5000 }), fc.integer({ min: -(2 ** 40), max: 2 ** 40 })),
  key: fc.oneof(bytes, fc.constant(null)),
  value: fc.oneof(bytes, fc.constant(null)),
  headers: fc.array(fc.tuple(headerName, bytes), { maxLength: 5 }),
});
const digits = fc.oneof(fc.bigInt({ min: -1n, max: 2n ** 45n }), fc.bigInt({ min: 2n ** 53n, max: 2n ** 63n - 1n })).map(String);
const context = fc.record({
  firstOffset: digits,
  firstTimestamp: digits,
  maxTimestamp: digits,
  magicByte: fc.constant(2),
  isControlBatch: fc.boolean(),
  timestampType: fc.constantFrom(0, 1),
});

test("a fetched record is decoded as kafkajs's decoder decodes it", () => {
  fc.assert(
    fc.property(record, context, (r, ctx) => {
      // Headers repeated by name: kafkajs's encoder takes arrays for them.
      const headers: Record<string, unknown> = {};
      for (const [k, v] of r.headers) {
        const prev = Object.hasOwn(headers, k) ? headers[k] : undefined;
        const next = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
        Object.defineProperty(headers, k, { value: next, enumerable: true, writable: true, configurable: true });
      }
      const b = body({ ...r, headers });
      const [mine, theirs] = [new Decoder(b), new Decoder(b)];
      const decoded = decodeRecord(mine, ctx) ?? original(mine, ctx);
      const expected = original(theirs, ctx);
      expect(mine.offset).toBe(theirs.offset);
      const { headers: h1, ...rest1 } = decoded as { headers: object };
      const { headers: h2, ...rest2 } = expected as { headers: object };
      expect(rest1).toEqual(rest2);
      expect(Object.getPrototypeOf(h1)).toBe(Object.getPrototypeOf(h2));
      expect(Object.entries(h1)).toEqual(Object.entries(h2));
    }),
    { numRuns: 2000 },
  );
});

test("the records idd reads are decoded here, not left to kafkajs", () => {
  const b = body({
    key: Buffer.from("order"),
    value: Buffer.from("{}"),
    headers: { kafka_replyTopic: "r" },
    offsetDelta: 3,
    timestampDelta: 12,
  });
  const ctx = { firstOffset: "1000", firstTimestamp: "1795496935797", maxTimestamp: "1795496935809", magicByte: 2, timestampType: 0 };
  expect(decodeRecord(new Decoder(b), ctx)).toMatchObject({ offset: "1003", timestamp: "1795496935809" });
});
