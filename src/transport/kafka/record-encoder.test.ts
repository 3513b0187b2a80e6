import { createRequire } from "node:module";
import fc from "fast-check";
import { expect, test } from "vitest";
import { encodeRecord, type RecordInput } from "./record-encoder.js";

const require = createRequire(import.meta.url);
const PATH = require.resolve("kafkajs/src/protocol/recordBatch/record/v0/index.js");
/** kafkajs's own record encoder, read from its file whatever the require cache holds. */
const original = (() => {
  const cached = require.cache[PATH];
  delete require.cache[PATH];
  try {
    return require(PATH) as (r: RecordInput) => { buffer: Buffer };
  } finally {
    if (cached) require.cache[PATH] = cached;
  }
})();

const bytes = fc.oneof(
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
);
const headerValue = fc.oneof(bytes, fc.array(bytes, { maxLength: 3 }));
const record = fc.record(
  {
    offsetDelta: fc.oneof(fc.nat(1000), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })),
    timestampDelta: fc.oneof(fc.integer({ min: -5000, max: 5000 }), fc.integer({ min: -(2 ** 45), max: 2 ** 45 })),
    key: fc.oneof(bytes, fc.constant(null), fc.constant(undefined)),
    value: fc.oneof(bytes, fc.constant(null)),
    headers: fc.oneof(fc.dictionary(fc.string({ maxLength: 20 }), headerValue, { maxKeys: 4 }), fc.constant(undefined)),
  },
  { requiredKeys: ["value"] },
);

test("a record is encoded to the bytes kafkajs's encoder writes", () => {
  fc.assert(
    fc.property(record, (r) => {
      const ours = encodeRecord(r) ?? original(r);
      expect(ours.buffer.equals(original(r).buffer)).toBe(true);
    }),
    { numRuns: 2000 },
  );
});

test("the records idd sends are encoded here, not left to kafkajs", () => {
  const reply = { key: Buffer.from("order"), value: Buffer.from('{"status":"OK"}'), headers: { kafka_correlationId: Buffer.from([1, 2]) } };
  expect(encodeRecord({ ...reply, offsetDelta: 499, timestampDelta: 0 })).toBeDefined();
  expect(encodeRecord({ ...reply, headers: { ...reply.headers, idd_errorCode: "UNAVAILABLE" }, offsetDelta: 0 })).toBeDefined();
  expect(encodeRecord({ key: null, value: Buffer.alloc(0), headers: { idd_forwards: ["1", Buffer.from("2")] } })).toBeDefined();
});

test("shapes left to kafkajs: what kafkajs does with them, it does", () => {
  expect(encodeRecord({ value: "v", headers: { h: null } })).toBeUndefined();
  expect(() => original({ value: "v", headers: { h: null } })).toThrow();
  expect(encodeRecord({ value: 5 })).toBeUndefined();
  expect(encodeRecord({ value: "v", timestampDelta: 2 ** 40 })).toBeUndefined();
});
