/** How kafkajs's errors, as kafkajs builds and wraps them, become SendFailures and coded login failures. No broker needed. */
import kafkajs from "kafkajs";
import { expect, test } from "vitest";
import type { KafkaSecurity } from "../../config/security.js";
import { IddError } from "../../core/errors.js";
import { kafkaAuthFailure, SendFailure, toSendFailure } from "./errors.js";

const {
  KafkaJSAggregateError,
  KafkaJSConnectionError,
  KafkaJSMetadataNotLoaded,
  KafkaJSNumberOfRetriesExceeded,
  KafkaJSProtocolError,
  KafkaJSRequestTimeoutError,
  KafkaJSSASLAuthenticationError,
} = kafkajs;

/** A broker error as kafkajs's protocol/error.js describes one: type, code, retriable, message. */
const protocolError = (type: string, code: number, retriable: boolean) =>
  new KafkaJSProtocolError(Object.assign(new Error(`broker says ${type}`), { type, code, retriable }));
/** What kafkajs's retrier throws once a retriable error kept coming back. */
const retriesExceeded = (cause: Error) => new KafkaJSNumberOfRetriesExceeded(cause, { retryCount: 3, retryTime: 1000 });

test("records the broker refuses are `record` failures; the type says which refusal", () => {
  for (const type of ["MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "INVALID_RECORD"]) {
    const f = toSendFailure(protocolError(type, 10, false));
    expect(f).toBeInstanceOf(SendFailure);
    expect([f.kind, f.type, f.message]).toEqual(["record", type, `broker says ${type}`]);
  }
});

test("a topic or partition that refuses every record is a `destination` failure", () => {
  for (const type of [
    "INVALID_TOPIC_EXCEPTION",
    "TOPIC_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED",
    "INVALID_PARTITIONS",
    "INVALID_REQUIRED_ACKS",
    "POLICY_VIOLATION",
  ])
    expect(toSendFailure(protocolError(type, 29, false)).kind).toBe("destination");
});

test("an unknown topic is found however kafkajs wraps it: retries exceeded, an aggregate, missing metadata, or only the message", () => {
  const unknown = protocolError("UNKNOWN_TOPIC_OR_PARTITION", 3, true);
  expect(toSendFailure(unknown)).toMatchObject({ kind: "unknown-topic", type: "UNKNOWN_TOPIC_OR_PARTITION" });
  expect(toSendFailure(retriesExceeded(unknown))).toMatchObject({ kind: "unknown-topic", type: "UNKNOWN_TOPIC_OR_PARTITION" });
  expect(toSendFailure(new KafkaJSAggregateError("2 sends failed", [new Error("other"), unknown]))).toMatchObject({
    kind: "unknown-topic",
    type: "KafkaJSAggregateError",
  });
  const MetadataNotLoaded = KafkaJSMetadataNotLoaded as unknown as new (message: string) => Error; // typings declare no argument
  expect(toSendFailure(new MetadataNotLoaded("Topic metadata not loaded"))).toMatchObject({
    kind: "unknown-topic",
    type: "METADATA_NOT_LOADED",
  });
  expect(toSendFailure(new Error("This server does not host this topic-partition")).kind).toBe("unknown-topic");
});

test("leaders moving, brokers restarting and timeouts are `transient`, also after kafkajs gave up retrying", () => {
  const notLeader = protocolError("NOT_LEADER_FOR_PARTITION", 6, true);
  expect(toSendFailure(notLeader)).toMatchObject({ kind: "transient", type: "NOT_LEADER_FOR_PARTITION" });
  expect(toSendFailure(retriesExceeded(notLeader))).toMatchObject({ kind: "transient", type: "NOT_LEADER_FOR_PARTITION" });
  const refused = new KafkaJSConnectionError("Connection error: connect ECONNREFUSED", { broker: "localhost:9092" });
  expect(toSendFailure(retriesExceeded(refused))).toMatchObject({ kind: "transient", type: "KafkaJSNumberOfRetriesExceeded" });
  expect(toSendFailure(new KafkaJSRequestTimeoutError("Request Produce(key: 0, version: 7) timed out")).kind).toBe("transient");
  const odd = toSendFailure("a string thrown");
  expect([odd.kind, odd.type, odd.message]).toEqual(["transient", "Error", "a string thrown"]);
});

test("the SendFailure keeps kafkajs's error as its cause", () => {
  const e = protocolError("MESSAGE_TOO_LARGE", 10, false);
  expect(toSendFailure(e).cause).toBe(e);
});

test("a refused login becomes KAFKA_AUTH_FAILED naming broker, user and mechanism, never the password", () => {
  // kafkajs passes its constructor arguments on, though its typings declare none.
  const SaslError = KafkaJSSASLAuthenticationError as unknown as new (message: string) => Error;
  const refused = new SaslError("SASL SCRAM SHA512 authentication failed: bad credentials");
  const security: KafkaSecurity = { sasl: { mechanism: "scram-sha-512", username: "idd", password: "hunter2" } };
  const e = kafkaAuthFailure(refused, ["k1:9093", "k2:9093"], security);
  expect(e).toBeInstanceOf(IddError);
  expect((e as IddError).code).toBe("KAFKA_AUTH_FAILED");
  expect((e as IddError).message).toContain('Kafka at k1:9093,k2:9093 refused user "idd" (SCRAM-SHA-512)');
  expect((e as IddError).message).not.toContain("hunter2");
  const other = new KafkaJSConnectionError("Connection error: connect ECONNREFUSED");
  expect(kafkaAuthFailure(other, ["k1:9093"])).toBe(other);
});
