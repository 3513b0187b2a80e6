import { expect, test } from "vitest";
import { IddError } from "../core/errors.js";
import { errorReply, okReply } from "../protocol/reply.js";
import { replyRecord } from "./answer.js";

const address = {
  topic: "replies",
  partition: 2,
  correlation: { kafka_correlationId: Buffer.from("c-1"), REPLY_CORRELATION_ID: Buffer.from("c-2") },
};

test("a reply echoes every correlation header under its own name and carries NestJS's kafka_nest-is-disposed", () => {
  const r = replyRecord(okReply("r1", "order", null, [{ first: 1n, last: 1n }], 0), address, Buffer.from("order"), "json", 0);
  expect(r.headers).toEqual({
    kafka_correlationId: Buffer.from("c-1"),
    REPLY_CORRELATION_ID: Buffer.from("c-2"),
    "kafka_nest-is-disposed": Buffer.alloc(1),
  });
  expect([r.topic, r.partition]).toEqual(["replies", 2]);
});

test("an error reply carries its code (idd_errorCode) and idd's error as JSON in kafka_nest-err, which a NestJS client's observable errors with", () => {
  const e = new IddError("UNKNOWN_SEQUENCE", 'no sequence named "x"');
  const r = replyRecord(errorReply("r1", "x", e, 0), { topic: "replies" }, null, "json", 0);
  expect(r.headers?.idd_errorCode).toBe("UNKNOWN_SEQUENCE");
  expect(JSON.parse(String(r.headers?.["kafka_nest-err"]))).toEqual({ code: "UNKNOWN_SEQUENCE", message: 'no sequence named "x"' });
  expect(r.headers?.["kafka_nest-is-disposed"]).toEqual(Buffer.alloc(1));
});
