/** CONFIRM and VOID requests as parsed (the action, numbers, reason and period fields; docs/sequences.md: Gapless numbering). */
import { expect, test } from "vitest";
import { avroType, frame, requestSchemaText } from "./avro.js";
import { parseRequest, type RequestDecoder, type RequestLimits } from "./request.js";

const LIMITS: RequestLimits = {
  maxCount: 100,
  maxRequestBytes: 65_536,
  maxCorrelationIdBytes: 1024,
  maxHeaderBytes: 16_384,
  requestTopic: "idd.requests",
  deadLetterTopic: "idd.requests.dlq",
};
/** JSON records never reach the Avro decoder. */
const NO_AVRO = {} as RequestDecoder;
const parse = (o: object) =>
  parseRequest(
    {
      key: Buffer.from("inv"),
      value: Buffer.from(JSON.stringify({ requestId: "r1", sequence: "inv", ...o })),
      headers: { kafka_replyTopic: "replies" },
    },
    NO_AVRO,
    LIMITS,
  );
const code = (o: object) => {
  const r = parse(o);
  return r.ok ? "OK" : r.error.code;
};

test("CONFIRM and VOID parse to a settle; ISSUE (the default) has none", () => {
  const issue = parse({ count: 2 });
  expect(issue.ok && issue.request.settle).toBeUndefined();
  const confirm = parse({ action: "CONFIRM", numbers: [3, "9007199254740993", 3] });
  expect(confirm.ok && confirm.request.settle).toEqual({
    action: "CONFIRM",
    numbers: [3n, 9_007_199_254_740_993n, 3n],
    reason: null,
    period: null,
  });
  const voided = parse({ action: "VOID", numbers: [1], reason: "cancelled", period: "202611" });
  expect(voided.ok && voided.request.settle).toEqual({ action: "VOID", numbers: [1n], reason: "cancelled", period: "202611" });
});

test("hostile CONFIRM and VOID fields: each a stable code, never a throw", () => {
  expect(code({ action: "DELETE", numbers: [1] })).toBe("BAD_REQUEST");
  expect(code({ action: 1 })).toBe("BAD_REQUEST");
  expect(code({ action: "CONFIRM", numbers: "1,2" })).toBe("BAD_REQUEST");
  expect(code({ action: "CONFIRM", numbers: [-1] })).toBe("BAD_REQUEST");
  expect(code({ action: "CONFIRM", numbers: [1.5, {}, null] })).toBe("BAD_REQUEST");
  expect(code({ action: "CONFIRM", numbers: ["99999999999999999999"] })).toBe("BAD_REQUEST");
  expect(code({ action: "CONFIRM", numbers: ["9223372036854775808"] })).toBe("BAD_REQUEST"); // 2^63
  expect(code({ action: "VOID", numbers: [1] })).toBe("BAD_REQUEST");
  expect(code({ action: "VOID", numbers: [1], reason: " " })).toBe("BAD_REQUEST");
  expect(code({ action: "VOID", numbers: [1], reason: "x".repeat(257) })).toBe("BAD_REQUEST");
  expect(code({ action: "CONFIRM", numbers: [1], period: "2026-11" })).toBe("BAD_REQUEST");
  expect(code({ numbers: [1] })).toBe("BAD_REQUEST"); // numbers on an ISSUE
  expect(code({ action: "CONFIRM", numbers: [] })).toBe("INVALID_COUNT");
  expect(code({ action: "CONFIRM" })).toBe("INVALID_COUNT");
  expect(code({ action: "CONFIRM", numbers: Array.from({ length: 101 }, () => 1) })).toBe("INVALID_COUNT"); // counted as sent
  expect(code({ action: "CONFIRM", numbers: Array.from({ length: 100 }, (_, i) => i) })).toBe("OK");
});

test("Avro: a VOID round-trips the current schema with its fields", () => {
  const type = avroType(requestSchemaText);
  const value = {
    requestId: "r",
    sequence: "inv",
    count: 1,
    replyTo: null,
    deadline: null,
    fields: {},
    action: "VOID",
    numbers: [7n],
    reason: "why",
    period: null,
  };
  const decoder = { decode: (v: Buffer) => type.fromBuffer(v.subarray(5)) } as unknown as RequestDecoder;
  const r = parseRequest(
    { key: Buffer.from("inv"), value: frame(1, type, value), headers: { kafka_replyTopic: "replies" } },
    decoder,
    LIMITS,
  );
  expect(r.ok && r.request.settle).toEqual({ action: "VOID", numbers: [7n], reason: "why", period: null });
});
