import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { isIddError } from "../core/errors.js";
import { PACKAGE_ROOT } from "../core/package-root.js";
import { avroType, frame, replyType, requestType, unframe } from "./avro.js";
import { headerBytes, replyPartition } from "./headers.js";
import { encodeReply, type IdReply, replyFromJson, replyJson, toJson } from "./reply.js";
import { parseRequest, type RequestDecoder, type RequestLimits } from "./request.js";

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

/** What a request written without the fields added since v1 reads as: an ISSUE with no fields. */
const V2_DEFAULTS = { fields: {}, action: "ISSUE", numbers: [], reason: null, period: null };

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
  expect(requestType.fromBuffer(body)).toEqual({ ...req, ...V2_DEFAULTS }); // written with its defaults
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

test("v1 clients keep working: v1 requests read with the new fields' defaults, new replies read by a v1 reader", () => {
  const v1 = (name: string) => avroType(readFileSync(join(PACKAGE_ROOT, "test/fixtures/schemas-v1", name), "utf8"));
  const [v1Request, v1Reply] = [v1("IdRequest.avsc"), v1("IdReply.avsc")];
  const old = { requestId: "a", sequence: "order", count: 2, replyTo: null, deadline: 5n };
  const read = requestType.fromBuffer(v1Request.toBuffer(old), requestType.createResolver(v1Request));
  expect(read).toEqual({ ...old, ...V2_DEFAULTS });
  const reply = { ...big, formatted: ["QJ000001"], formattedOmitted: true };
  const { formattedOmitted: _, ...seenByV1 } = reply;
  expect(v1Reply.fromBuffer(replyType.toBuffer(reply), v1Reply.createResolver(replyType))).toEqual(seenByV1);
});

test("kafka_replyPartition: 4 ASCII digit bytes read as decimal (as an int32 they would be ≥ 808,464,432)", () => {
  expect(replyPartition({ kafka_replyPartition: Buffer.from("0012", "latin1") })).toBe(12);
  expect(Buffer.from("0000", "latin1").readInt32BE(0)).toBe(808_464_432);
});

const LIMITS: RequestLimits = {
  maxCount: 10_000,
  maxRequestBytes: 65_536,
  maxCorrelationIdBytes: 1024,
  maxHeaderBytes: 16_384,
  requestTopic: "idd.requests",
  deadLetterTopic: "idd.requests.dlq",
};
/** JSON records never reach the Avro decoder. */
const NO_AVRO = {} as RequestDecoder;
const json = (o: object, headers: Record<string, Buffer | string | (Buffer | string)[]>) => ({
  key: Buffer.from("order"),
  value: Buffer.from(JSON.stringify({ requestId: "r1", sequence: "order", ...o })),
  headers,
});

test("a repeated header counts by its last copy, as Spring's lastHeader reads it (kafkajs gives an array)", () => {
  const be = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeInt32BE(n);
    return b;
  };
  const headers = {
    kafka_correlationId: [Buffer.from("first"), Buffer.from("second")],
    kafka_replyTopic: ["replies.first", "replies.second"],
    kafka_replyPartition: [be(7), be(2)],
  };
  expect(headerBytes(headers, "kafka_correlationId")?.toString()).toBe("second");
  expect(replyPartition(headers)).toBe(2);
  const r = parseRequest(json({}, headers), NO_AVRO, LIMITS);
  expect(r.ok && r.address).toEqual({ topic: "replies.second", partition: 2, correlation: { kafka_correlationId: Buffer.from("second") } });
  // An unreadable first copy does not matter; an unreadable last one does.
  expect(replyPartition({ kafka_replyPartition: [Buffer.from([1]), be(3)] })).toBe(3);
  expect(replyPartition({ kafka_replyPartition: [be(3), Buffer.from([1])] })).toBeNaN();
});

test("more than 16 fields is BAD_FIELDS, answered on the reply topic; with other problems too, BAD_REQUEST", () => {
  const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`f${i}`, "x"]));
  const headers = { kafka_replyTopic: "replies" };
  const r = parseRequest(json({ fields: many }, headers), NO_AVRO, LIMITS);
  expect(r.ok).toBe(false);
  expect(!r.ok && [r.error.code, r.error.message, r.address?.topic]).toEqual([
    "BAD_FIELDS",
    "fields has 17 entries; the maximum is 16",
    "replies",
  ]);
  const sixteen = parseRequest(json({ fields: Object.fromEntries(Object.entries(many).slice(0, 16)) }, headers), NO_AVRO, LIMITS);
  expect(sixteen.ok).toBe(true);
  const both = parseRequest(json({ fields: many, count: "3" }, headers), NO_AVRO, LIMITS);
  expect(!both.ok && [both.error.code, both.error.message]).toEqual([
    "BAD_REQUEST",
    "count must be an integer; fields has 17 entries; the maximum is 16",
  ]);
});

test("a reply topic found legal once is still refused as idd's own by a parser whose request topic it is", () => {
  const reply = { kafka_replyTopic: "other.requests" };
  const first = parseRequest(json({}, reply), NO_AVRO, LIMITS);
  expect(first.ok && first.address?.topic).toBe("other.requests");
  const own = parseRequest(json({}, reply), NO_AVRO, { ...LIMITS, requestTopic: "other.requests" });
  expect(!own.ok && own.error.code).toBe("REPLY_TOPIC_INVALID");
  expect(!own.ok && own.error.message).toMatch(/one of idd's own topics/);
});

test("Quarkus / SmallRye KafkaRequestReply's headers: REPLY_TOPIC, a 4-byte REPLY_PARTITION, REPLY_CORRELATION_ID echoed under its name", () => {
  const partition = Buffer.alloc(4);
  partition.writeInt32BE(3);
  const r = parseRequest(
    json({}, { REPLY_TOPIC: "orders-replies", REPLY_PARTITION: partition, REPLY_CORRELATION_ID: "6f1d0c2e-uuid" }),
    NO_AVRO,
    LIMITS,
  );
  expect(r.ok && r.address).toEqual({
    topic: "orders-replies",
    partition: 3,
    correlation: { REPLY_CORRELATION_ID: Buffer.from("6f1d0c2e-uuid") },
  });
  const bad = parseRequest(json({}, { REPLY_TOPIC: "orders-replies", REPLY_PARTITION: Buffer.from([1, 2]) }), NO_AVRO, LIMITS);
  expect(!bad.ok && [bad.error.code, bad.error.message]).toEqual([
    "REPLY_PARTITION_INVALID",
    "REPLY_PARTITION is neither a 4-byte int ≥ 0 nor decimal digits",
  ]);
  const long = parseRequest(json({}, { REPLY_TOPIC: "r", REPLY_CORRELATION_ID: "x".repeat(1025) }), NO_AVRO, LIMITS);
  expect(!long.ok && long.error.code).toBe("CORRELATION_ID_TOO_LARGE");
});

test("both conventions on one request: Spring's reply topic and partition win, and both correlation ids are echoed", () => {
  const r = parseRequest(
    json(
      {},
      {
        kafka_replyTopic: "spring-replies",
        kafka_replyPartition: "1",
        kafka_correlationId: "spring-id",
        REPLY_TOPIC: "smallrye-replies",
        REPLY_PARTITION: Buffer.from([0, 0, 0, 5]),
        REPLY_CORRELATION_ID: "smallrye-id",
      },
    ),
    NO_AVRO,
    LIMITS,
  );
  expect(r.ok && r.address).toEqual({
    topic: "spring-replies",
    partition: 1,
    correlation: { kafka_correlationId: Buffer.from("spring-id"), REPLY_CORRELATION_ID: Buffer.from("smallrye-id") },
  });
  // SmallRye's partition header does not apply to Spring's topic.
  const noPartition = parseRequest(
    json({}, { kafka_replyTopic: "spring-replies", REPLY_PARTITION: Buffer.from([0, 0, 0, 5]) }),
    NO_AVRO,
    LIMITS,
  );
  expect(noPartition.ok && noPartition.address).toEqual({ topic: "spring-replies" });
});
