/**
 * What a kafkajs failure means to idd: why a produce request failed (SendFailure, as the reply path
 * must treat it), whether a topic is unknown, and a refused login or an untrusted broker
 * certificate as one coded line.
 */
import type { KafkaSecurity } from "../../config/security.js";
import { oneLine, untrustedCertificate } from "../../config/untrusted.js";
import { IddError } from "../../core/errors.js";

/**
 * Why a produce request failed, as the reply path must treat it:
 * - `record`: a record the broker refuses (too large, invalid): the others of the request are fine;
 * - `destination`: the topic or partition refuses every record (invalid or internal topic, not authorised);
 * - `unknown-topic`: the topic or partition does not exist (any more), or the client has no metadata for it;
 * - `transient`: leader moving, broker restarting, timeouts: may succeed when tried again.
 */
export type SendFailureKind = "record" | "destination" | "unknown-topic" | "transient";

export class SendFailure extends Error {
  readonly kind: SendFailureKind;
  /** The broker's or client's error type, e.g. MESSAGE_TOO_LARGE. */
  readonly type: string;

  constructor(kind: SendFailureKind, type: string, message: string, cause: unknown) {
    super(message, { cause });
    this.name = "SendFailure";
    this.kind = kind;
    this.type = type;
  }
}

const RECORD_ERRORS = new Set(["MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "INVALID_RECORD"]);
const DESTINATION_ERRORS = new Set([
  "INVALID_TOPIC_EXCEPTION",
  "TOPIC_AUTHORIZATION_FAILED",
  "CLUSTER_AUTHORIZATION_FAILED",
  "INVALID_PARTITIONS",
  "INVALID_REQUIRED_ACKS",
  "POLICY_VIOLATION",
]);

/** The Kafka protocol error type inside a kafkajs error (they wrap each other), or the error's name. */
function errorType(e: unknown): string {
  for (let x = e as { type?: string; name?: string; cause?: unknown; originalError?: unknown } | undefined; x; ) {
    if (x.type) return x.type;
    if (x.name === "KafkaJSMetadataNotLoaded") return "METADATA_NOT_LOADED";
    x = (x.originalError ?? x.cause) as typeof x;
  }
  return (e as Error)?.name ?? "Error";
}

/** A kafkajs send error as a SendFailure of the kind the reply path acts on. */
export function toSendFailure(e: unknown): SendFailure {
  const type = errorType(e);
  const message = (e as Error)?.message ?? String(e);
  const kind: SendFailureKind = RECORD_ERRORS.has(type)
    ? "record"
    : DESTINATION_ERRORS.has(type)
      ? "destination"
      : type === "UNKNOWN_TOPIC_OR_PARTITION" || type === "METADATA_NOT_LOADED" || isUnknownTopic(e)
        ? "unknown-topic"
        : "transient";
  return new SendFailure(kind, type, message, e);
}

/** Whether a kafkajs error (or one it wraps or aggregates) says the topic or partition does not exist. */
export function isUnknownTopic(e: unknown): boolean {
  for (let x = e as { type?: string; cause?: unknown; originalError?: unknown; errors?: unknown[] } | undefined; x; ) {
    if (x.type === "UNKNOWN_TOPIC_OR_PARTITION") return true;
    if (x.errors?.some(isUnknownTopic)) return true;
    x = (x.originalError ?? x.cause) as typeof x;
  }
  return /does not host this topic-partition/.test(String((e as Error)?.message));
}

/**
 * A refused login as one coded line (the broker, the user and the mechanism, never the password),
 * and a broker certificate this client does not trust as another; other errors unchanged. kafkajs
 * gives up on SASL failures at once (not retriable); certificate failures it retries first.
 */
export function kafkaAuthFailure(e: unknown, brokers: string[], security: KafkaSecurity = {}): unknown {
  for (let x = e as { name?: string; message?: string; cause?: unknown; originalError?: unknown } | undefined; x; ) {
    if (x.name === "KafkaJSSASLAuthenticationError") {
      const who = security.sasl ? `user "${security.sasl.username}" (${security.sasl.mechanism.toUpperCase()})` : "the client";
      return new IddError("KAFKA_AUTH_FAILED", `Kafka at ${brokers.join(",")} refused ${who}: ${x.message}`, { cause: e });
    }
    if (security.tls && x.name === "KafkaJSConnectionError" && untrustedCertificate(x))
      return new IddError(
        "KAFKA_TLS_FAILED",
        `Kafka at ${brokers.join(",")}: ${oneLine(x)}; set KAFKA_SSL_CA_FILE to the CA that signed the brokers' certificates (and KAFKA_SSL_CERT_FILE, KAFKA_SSL_KEY_FILE when they want a client certificate)`,
        { cause: e },
      );
    x = (x.originalError ?? x.cause) as typeof x;
  }
  return e;
}

/**
 * Broker states a client waits out by itself (kafkajs retries, rejoins or finds the new leader or
 * coordinator), each in idd's words with what happens next: the coordinator loading or moving
 * (a fresh broker, a broker restarting), a rebalance, a partition's leader moving. They are worth
 * a warning, not an error: nobody need act.
 */
const SELF_HEALING: { type: string; text: RegExp; says: string }[] = [
  {
    type: "GROUP_LOAD_IN_PROGRESS",
    text: /coordinator is loading/,
    says: "Kafka group coordinator still loading; kafkajs retries",
  },
  {
    type: "GROUP_COORDINATOR_NOT_AVAILABLE",
    text: /group coordinator is not available/,
    says: "Kafka group coordinator not ready; kafkajs retries",
  },
  {
    type: "NOT_COORDINATOR_FOR_GROUP",
    text: /not the correct coordinator for this group/,
    says: "Kafka group coordinator moved; kafkajs asks the new one",
  },
  { type: "REBALANCE_IN_PROGRESS", text: /group is rebalancing/, says: "Kafka consumer group rebalancing; rejoining" },
  { type: "UNKNOWN_MEMBER_ID", text: /coordinator is not aware of this member/, says: "Kafka group forgot this member; rejoining" },
  {
    type: "LEADER_NOT_AVAILABLE",
    text: /no leader for this topic-partition/,
    says: "Kafka partition leader being elected; kafkajs retries",
  },
  {
    type: "NOT_LEADER_FOR_PARTITION",
    text: /not the leader for that topic-partition/,
    says: "Kafka partition leader moved; kafkajs retries on the new leader",
  },
];

/** What a kafkajs error (or one it wraps) or log line says of a state the client waits out, in idd's words; undefined for anything else. */
export function selfHealingState(e: unknown): string | undefined {
  if (typeof e === "string") return SELF_HEALING.find((s) => s.text.test(e))?.says;
  for (let x = e as { type?: string; message?: string; cause?: unknown; originalError?: unknown } | undefined; x; ) {
    const found = SELF_HEALING.find((s) => s.type === x?.type || (typeof x?.message === "string" && s.text.test(x.message)));
    if (found) return found.says;
    x = (x.originalError ?? x.cause) as typeof x;
  }
  return undefined;
}

/**
 * A setting the brokers refuse for good, in idd's words (undefined for anything else): rejoining
 * with it again can only fail again, so the worker stops instead of crash-looping.
 */
export function refusedSetting(e: unknown, o: { sessionTimeoutMs: number }): string | undefined {
  for (let x = e as { type?: string; originalError?: unknown; cause?: unknown } | undefined; x; ) {
    if (x.type === "INVALID_SESSION_TIMEOUT")
      return `the brokers refuse IDD_SESSION_TIMEOUT_MS=${o.sessionTimeoutMs}: it must lie within their group.min.session.timeout.ms and group.max.session.timeout.ms (6000 and 1800000 unless changed)`;
    x = (x.originalError ?? x.cause) as typeof x;
  }
  return undefined;
}
