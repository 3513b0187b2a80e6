/**
 * ID requests as a plain kafkajs client writes them (not through IdClient) — good ones and hostile
 * ones — each with what idd must do with it: answer with numbers, answer with an error reply
 * carrying a code, or dead-letter it with a code (docs/wire-contract.md, "Error codes"). Shared by
 * the chaos suite's `hostile` and `overload` phases (test/chaos/) and by tests that want them.
 *
 * A built request has no topic and no partition: the sender picks them (the request topic, and the
 * partition of its key, as kafkajs's default partitioner and idd's clients would).
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import type { IHeaders, Message } from "kafkajs";

/** What idd must do with a request. */
export type Expected =
  | { outcome: "numbers"; count: number }
  | { outcome: "error-reply"; code: string }
  | { outcome: "dead-letter"; code: string };

export type HostileKind =
  /** kafka_replyTopic `__consumer_offsets` (or a name Kafka does not allow): dead-lettered REPLY_TOPIC_INVALID. */
  | "reply-topic-invalid"
  /** A partition the reply topic does not have (or an unreadable / negative one): dead-lettered REPLY_PARTITION_INVALID. */
  | "reply-partition-invalid"
  /** A reply topic that does not exist: dead-lettered REPLY_TOPIC_UNKNOWN. */
  | "reply-topic-unknown"
  /** A 900 KB kafka_correlationId: dead-lettered CORRELATION_ID_TOO_LARGE (send it in a produce request of its own). */
  | "correlation-id-huge"
  /** 300 junk headers of 1 KB each: dead-lettered HEADERS_TOO_LARGE (send it in a produce request of its own). */
  | "headers-huge"
  /** Invalid JSON with a valid reply topic: an error reply BAD_JSON. */
  | "bad-json"
  /** Invalid JSON and no reply address at all: dead-lettered BAD_JSON. */
  | "bad-json-no-reply"
  /** count 0: an error reply INVALID_COUNT. */
  | "zero-count";

export const HOSTILE_KINDS: readonly HostileKind[] = [
  "reply-topic-invalid",
  "reply-partition-invalid",
  "reply-topic-unknown",
  "correlation-id-huge",
  "headers-huge",
  "bad-json",
  "bad-json-no-reply",
  "zero-count",
];

export const HOSTILE_EXPECTED: Record<HostileKind, Expected> = {
  "reply-topic-invalid": { outcome: "dead-letter", code: "REPLY_TOPIC_INVALID" },
  "reply-partition-invalid": { outcome: "dead-letter", code: "REPLY_PARTITION_INVALID" },
  "reply-topic-unknown": { outcome: "dead-letter", code: "REPLY_TOPIC_UNKNOWN" },
  "correlation-id-huge": { outcome: "dead-letter", code: "CORRELATION_ID_TOO_LARGE" },
  "headers-huge": { outcome: "dead-letter", code: "HEADERS_TOO_LARGE" },
  "bad-json": { outcome: "error-reply", code: "BAD_JSON" },
  "bad-json-no-reply": { outcome: "dead-letter", code: "BAD_JSON" },
  "zero-count": { outcome: "error-reply", code: "INVALID_COUNT" },
};

/** Records at least this large go in a produce request of their own (the broker takes at most 1 MiB per batch). */
export const LARGE_RECORD_BYTES = 100 * 1024;

export interface BuiltRequest {
  kind: HostileKind | "good";
  /** Key (the sequence name), value and headers; no topic, no partition. */
  message: Message;
  /** `correlationKey` of the request's kafka_correlationId: how its reply or dead letter is found. */
  correlation: string;
  expect: Expected;
  sequence: string;
  /** Key, value and headers in bytes: send records of LARGE_RECORD_BYTES and more alone. */
  bytes: number;
}

/** Where requests ask to be answered. */
export interface ReplyTarget {
  /** An existing topic the caller reads. */
  replyTopic: string;
  /** Its partition count: a partition at or beyond it is the REPLY_PARTITION_INVALID case. */
  replyPartitions: number;
  /** A topic name that does not exist (and will not be created). */
  missingTopic: string;
}

/**
 * The key under which a correlation id is tracked: hex for ordinary ids, a digest for long ones
 * (a 900 KB id would make a 1.8 MB map key).
 */
export function correlationKey(id: Buffer | string | undefined): string {
  if (id === undefined) return "";
  const b = typeof id === "string" ? Buffer.from(id, "utf8") : id;
  return b.length <= 64 ? b.toString("hex") : `sha256:${createHash("sha256").update(b).digest("hex")}`;
}

function headerBytes(h: IHeaders): number {
  let n = 0;
  for (const [k, v] of Object.entries(h)) {
    n += Buffer.byteLength(k);
    for (const one of Array.isArray(v) ? v : [v]) if (one !== undefined) n += typeof one === "string" ? Buffer.byteLength(one) : one.length;
  }
  return n;
}

function built(kind: HostileKind | "good", sequence: string, value: string | Buffer, headers: IHeaders, expect: Expected): BuiltRequest {
  const message: Message = { key: sequence, value, headers };
  const bytes = Buffer.byteLength(sequence) + (typeof value === "string" ? Buffer.byteLength(value) : value.length) + headerBytes(headers);
  return { kind, message, correlation: correlationKey(headers.kafka_correlationId as Buffer), expect, sequence, bytes };
}

const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

/**
 * A well-formed JSON request for `count` numbers of `sequence`, answered on `replyTopic`. `variant`
 * picks how the reply partition is named: none (idd picks the partition of the key), Spring's
 * 4-byte int, or ASCII digits.
 */
export function goodRequest(
  sequence: string,
  target: Pick<ReplyTarget, "replyTopic" | "replyPartitions">,
  count = 1,
  variant = 0,
): BuiltRequest {
  const headers: IHeaders = { kafka_correlationId: randomBytes(16), kafka_replyTopic: target.replyTopic };
  const partition = variant % target.replyPartitions;
  if (variant % 3 === 1) headers.kafka_replyPartition = int32(partition);
  else if (variant % 3 === 2) headers.kafka_replyPartition = String(partition);
  const value = JSON.stringify({ requestId: randomUUID(), sequence, count });
  return built("good", sequence, value, headers, { outcome: "numbers", count });
}

/**
 * One hostile request of `kind` for `sequence` (otherwise well-formed, so only the hostile part
 * decides its fate). `variant` cycles through the forms a kind comes in (e.g. a partition beyond
 * the topic's, a negative one, an unreadable one).
 */
export function hostileRequest(kind: HostileKind, sequence: string, target: ReplyTarget, variant = 0): BuiltRequest {
  const correlation = randomBytes(16);
  const body = { requestId: randomUUID(), sequence, count: 1 };
  const json = (o: object = {}) => JSON.stringify({ ...body, ...o });
  const expect = HOSTILE_EXPECTED[kind];
  switch (kind) {
    case "reply-topic-invalid": {
      const topics = ["__consumer_offsets", "__transaction_state", "no such topic!"];
      return built(
        kind,
        sequence,
        json(),
        { kafka_correlationId: correlation, kafka_replyTopic: topics[variant % topics.length] as string },
        expect,
      );
    }
    case "reply-partition-invalid": {
      const forms = [int32(target.replyPartitions + 4), String(target.replyPartitions + 990), int32(-1), Buffer.from("abc")];
      const headers = {
        kafka_correlationId: correlation,
        kafka_replyTopic: target.replyTopic,
        kafka_replyPartition: forms[variant % forms.length] as Buffer,
      };
      return built(kind, sequence, json(), headers, expect);
    }
    case "reply-topic-unknown":
      return built(kind, sequence, json(), { kafka_correlationId: correlation, kafka_replyTopic: target.missingTopic }, expect);
    case "correlation-id-huge":
      return built(kind, sequence, json(), { kafka_correlationId: randomBytes(900 * 1024), kafka_replyTopic: target.replyTopic }, expect);
    case "headers-huge": {
      const headers: IHeaders = { kafka_correlationId: correlation, kafka_replyTopic: target.replyTopic };
      for (let i = 0; i < 300; i++) headers[`junk-${i}`] = randomBytes(1024);
      return built(kind, sequence, json(), headers, expect);
    }
    case "bad-json": {
      const forms = ['{"requestId": "x", "sequence": ', "{not json at all", `{"sequence":"${sequence}","count":1,}`];
      return built(
        kind,
        sequence,
        forms[variant % forms.length] as string,
        { kafka_correlationId: correlation, kafka_replyTopic: target.replyTopic },
        expect,
      );
    }
    case "bad-json-no-reply":
      return built(kind, sequence, '{"requestId": "x", "count": ', { kafka_correlationId: correlation }, expect);
    case "zero-count":
      return built(kind, sequence, json({ count: 0 }), { kafka_correlationId: correlation, kafka_replyTopic: target.replyTopic }, expect);
  }
}
