import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { isIddError } from "../errors.js";
import { PACKAGE_ROOT } from "../package-root.js";
import { avroType, frame, replyType, requestType, unframe } from "./avro.js";
import { replyPartition } from "./headers.js";
import { encodeReply, type IdReply, replyFromJson, replyJson, toJson } from "./reply.js";

const big: IdReply = {
  requestId: "r",
  sequence: "snow",
  period: null,
  status: "OK",
  ranges: [{ first: 2n ** 63n - 10n, last: 2n ** 63n - 1n }],
  formatted: [],
  formattedOmitted: false,
  error: null,
  issuedAt: 1_763_700_000_000n,
};

test("Avro longs are BigInt end to end, exact up to 2^63 - 1 (I6)", () => {
  const back = replyType.fromBuffer(replyType.toBuffer(big)) as IdReply;
  expect(back.ranges[0]).toEqual({ first: 9223372036854775798n, last: 9223372036854775807n });
  expect(() => replyType.toBuffer({ ...big, ranges: [{ first: 2n ** 63n, last: 0n }] })).toThrow();
});

test("Confluent framing: magic byte 0, 4-byte big-endian schema id, Avro body", () => {
  const req = { requestId: "a", sequence: "order", count: 2, replyTo: null, deadline: null };
  const f = frame(258, requestType, req);
  expect([...f.subarray(0, 5)]).toEqual([0, 0, 0, 1, 2]);
  const { schemaId, body } = unframe(f);
  expect(schemaId).toBe(258);
  expect(requestType.fromBuffer(body)).toEqual({ ...req, fields: {} }); // written with its default
  expect(() => unframe(Buffer.from([1, 0, 0, 0, 1, 2]))).toThrow(expect.objectContaining({ code: "BAD_FRAME" }));
  let e: unknown;
  try {
    unframe(Buffer.from([0, 1]));
  } catch (x) {
    e = x;
  }
  expect(isIddError(e, "BAD_FRAME")).toBe(true);
});

test("kafka_replyPartition: 4-byte big-endian (Spring) or ASCII decimal", () => {
  const be = Buffer.alloc(4);
  be.writeInt32BE(3);
  expect(replyPartition({ kafka_replyPartition: be })).toBe(3);
  expect(replyPartition({ kafka_replyPartition: "12" })).toBe(12);
  expect(replyPartition({ kafka_replyPartition: Buffer.from([0, 0, 1]) })).toBeNaN();
  expect(replyPartition({ kafka_replyPartition: Buffer.from([0xff, 0xff, 0xff, 0xff]) })).toBeNaN(); // -1
  expect(replyPartition({})).toBeUndefined();
});

test("JSON replies carry exact digits for numbers above 2^53", () => {
  const text = encodeReply(big, "json", 0).toString("utf8");
  expect(text).toContain('"first":9223372036854775798');
  expect(replyFromJson(text)).toEqual(big);
  expect(toJson({ a: 1n, b: "\u0000x" })).toBe('{"a":1,"b":"\\u0000x"}');
});

test("the direct reply encoder writes exactly what toJson writes", () => {
  const error: IdReply = {
    ...big,
    requestId: 'a "quoted"\n id ✓',
    period: "20261123",
    status: "ERROR",
    ranges: [],
    formatted: ["QJ000001", "x\\y"],
    error: { code: "UNAVAILABLE", message: 'no "headroom"\t' },
  };
  const two: IdReply = {
    ...big,
    ranges: [
      { first: 1n, last: 5n },
      { first: 100n, last: 100n },
    ],
  };
  for (const r of [big, error, two]) expect(replyJson(r)).toBe(toJson(r));
});

test("v1 clients keep working: v1 requests read with fields {}, new replies read by a v1 reader", () => {
  const v1 = (name: string) => avroType(readFileSync(join(PACKAGE_ROOT, "test/fixtures/schemas-v1", name), "utf8"));
  const [v1Request, v1Reply] = [v1("IdRequest.avsc"), v1("IdReply.avsc")];
  const old = { requestId: "a", sequence: "order", count: 2, replyTo: null, deadline: 5n };
  const read = requestType.fromBuffer(v1Request.toBuffer(old), requestType.createResolver(v1Request));
  expect(read).toEqual({ ...old, fields: {} });
  const reply = { ...big, formatted: ["QJ000001"], formattedOmitted: true };
  const { formattedOmitted: _, ...seenByV1 } = reply;
  expect(v1Reply.fromBuffer(replyType.toBuffer(reply), v1Reply.createResolver(replyType))).toEqual(seenByV1);
});
