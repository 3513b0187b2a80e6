/**
 * One error type for the whole project. Every failure a user or a client can see carries a stable
 * `code` from the table below, which also says whether it is retriable and who meets it; error
 * replies carry the same codes, so clients can switch on them.
 */

/**
 * Who meets an error: `reply` codes travel in error replies (clients switch on them; any other code
 * met while issuing is answered UNAVAILABLE), `dead-letter` codes on dead-letter records, `operator`
 * codes in the CLI's and the worker's output, `client` codes from the client library, `stack` codes
 * from the local stack, and `internal` codes are handled inside a worker and reach no one.
 */
export type Audience = "reply" | "dead-letter" | "operator" | "client" | "stack" | "internal";

export interface ErrorRow {
  /** Whether trying again may succeed; "varies": the thrower says (e.g. an HTTP 5xx from the registry). */
  retriable: boolean | "varies";
  audience: readonly Audience[];
  doc: string;
}

/** Every error code, one row each: the policy lives here, not at the throw sites. */
export const ERRORS = {
  // configuration
  CONFIG_INVALID: { retriable: false, audience: ["operator"], doc: "configuration is invalid; every problem is listed in the message" },
  // local stack (npm run stack)
  STACK_TOOL_MISSING: {
    retriable: false,
    audience: ["stack"],
    doc: "a tool the local stack needs to install or run a service is not installed",
  },
  STACK_PORT_IN_USE: { retriable: false, audience: ["stack"], doc: "a port the local stack wants is taken by a process it did not start" },
  STACK_NOT_READY: { retriable: false, audience: ["stack"], doc: "a local stack service did not become ready in time" },
  STACK_EXITED: { retriable: false, audience: ["stack"], doc: "a local stack service exited while starting" },
  STACK_INSTALL_FAILED: { retriable: false, audience: ["stack"], doc: "installing a local stack service failed" },
  // requests: these codes travel in error replies (and dead-letter records); clients switch on them
  BAD_FRAME: { retriable: false, audience: ["reply"], doc: "the value is neither JSON nor Confluent-framed Avro" },
  BAD_AVRO: { retriable: false, audience: ["reply"], doc: "the Avro body does not decode with the schema its frame names" },
  UNKNOWN_SCHEMA_ID: { retriable: false, audience: ["reply"], doc: "the frame names a schema id the registry does not know" },
  SCHEMA_INCOMPATIBLE: { retriable: false, audience: ["reply"], doc: "the writer schema cannot be read as idd.v1.IdRequest" },
  BAD_JSON: { retriable: false, audience: ["reply"], doc: "the value starts with { but is not valid JSON" },
  BAD_REQUEST: { retriable: false, audience: ["reply"], doc: "a required field is missing or has the wrong type" },
  REQUEST_TOO_LARGE: { retriable: false, audience: ["reply"], doc: "the value is larger than the configured maximum request size" },
  NO_REPLY_ADDRESS: {
    retriable: false,
    audience: ["dead-letter"],
    doc: "neither a kafka_replyTopic header nor a replyTo field: the request goes to the dead-letter topic",
  },
  BATCH_UNREADABLE: {
    retriable: false,
    audience: ["dead-letter"],
    doc: "a fetched record batch could not be decoded (unknown codec, corrupt payload): its requests are skipped unanswered, the batch's bytes dead-lettered with its offsets and the reason",
  },
  // a reply that can never be delivered: the request goes to the dead-letter topic with one of these
  REPLY_TOPIC_INVALID: {
    retriable: false,
    audience: ["dead-letter"],
    doc: "the reply topic is not a legal topic name, is internal to Kafka (__…), or is one of idd's own topics",
  },
  REPLY_TOPIC_UNKNOWN: {
    retriable: false,
    audience: ["dead-letter"],
    doc: "the reply topic does not exist (idd never creates reply topics)",
  },
  REPLY_PARTITION_INVALID: {
    retriable: false,
    audience: ["dead-letter"],
    doc: "kafka_replyPartition is unreadable, negative, or not a partition of the reply topic",
  },
  CORRELATION_ID_TOO_LARGE: {
    retriable: false,
    audience: ["dead-letter"],
    doc: "kafka_correlationId is longer than the configured maximum (it is echoed on the reply)",
  },
  HEADERS_TOO_LARGE: {
    retriable: false,
    audience: ["dead-letter"],
    doc: "the request's headers together are larger than the configured maximum",
  },
  REPLY_REFUSED: {
    retriable: false,
    audience: ["dead-letter"],
    doc: "the broker refused the reply for good (too large, not authorised, invalid topic); its reason is attached",
  },
  REPLY_FAILED: {
    retriable: true,
    audience: ["dead-letter"],
    doc: "the reply could not be written within the configured retry time (transient broker errors); the reason is attached",
  },
  INVALID_SEQUENCE_NAME: {
    retriable: false,
    audience: ["reply"],
    doc: "the sequence name is empty, too long or has characters outside A-Z a-z 0-9 . _ -",
  },
  KEY_MISMATCH: { retriable: false, audience: ["reply"], doc: "the message key is not the sequence name" },
  INVALID_COUNT: { retriable: false, audience: ["reply"], doc: "count is not between 1 and the configured maximum" },
  UNKNOWN_SEQUENCE: { retriable: false, audience: ["reply"], doc: "no sequence of that name is defined" },
  DEADLINE_EXCEEDED: { retriable: false, audience: ["reply"], doc: "the request's deadline passed before it could be answered" },
  SEQUENCE_EXHAUSTED: {
    retriable: false,
    audience: ["reply"],
    doc: "the sequence (in this period, for one that restarts) reached its maxValue; for a formatted sequence whose overflow is refuse, that is the largest serial its {seq:N} prints",
  },
  UNAVAILABLE: {
    retriable: true,
    audience: ["reply"],
    doc: "numbers cannot be issued now: Redis or MongoDB is unavailable and no headroom is left",
  },
  HOOK_REFUSED: {
    retriable: false,
    audience: ["reply"],
    doc: "an issuance hook (IDD_HOOKS) refused the request before numbers were issued; its reason is attached",
  },
  HOOK_INVALID: {
    retriable: false,
    audience: ["operator"],
    doc: "a module named in IDD_HOOKS could not be loaded or does not export an issuance hook",
  },
  NOT_GAPLESS: {
    retriable: false,
    audience: ["reply"],
    doc: "CONFIRM or VOID names a sequence that is not gapless: only gapless numbers are settled",
  },
  GAPLESS_NOT_PENDING: {
    retriable: false,
    audience: ["reply"],
    doc: "a number to confirm or void was never issued (in that period: then nothing is settled), or was settled the other way already (voided numbers cannot be confirmed, confirmed ones cannot be voided: the request's other numbers are settled); the message lists them",
  },
  INTERNAL: { retriable: false, audience: ["reply"], doc: "an unexpected error; the message says more" },
  WORKER_FENCED: {
    retriable: false,
    audience: ["internal"],
    doc: "this worker is no longer the issuer of a sequence of the batch (a newer gen claimed it, or Redis may have lost the fence): it publishes nothing, and takes its partition again if it still owns it",
  },
  ROUTE_STALE: {
    retriable: true,
    audience: ["internal"],
    doc: "the request topic has more partitions than this worker routed by (it was refused a gen): it publishes nothing, learns the new count and routes the requests again",
  },
  UNROUTABLE: {
    retriable: true,
    audience: ["reply"],
    doc: "the request was forwarded between workers too often without reaching its sequence's home partition (workers disagree on the request topic's partition count); retry",
  },
  // operations (idd status)
  STATUS_UNAVAILABLE: {
    retriable: true,
    audience: ["operator"],
    doc: "a worker's /status.json could not be read: not running, no IDD_HTTP_PORT, not reachable, or not an idd of this version",
  },
  // audits (idd audit)
  AUDIT_INVALID: {
    retriable: false,
    audience: ["operator"],
    doc: "idd audit cannot run as asked: a range, period or date that does not parse, or a sequence without a counter (snowflake)",
  },
  AUDIT_UNEXPLAINED: {
    retriable: false,
    audience: ["operator"],
    doc: "idd audit found numbers skipped that MongoDB's log does not explain (in no grant, no replay's headroom): they are named",
  },
  // client
  CLIENT_TIMEOUT: { retriable: true, audience: ["client"], doc: "no reply arrived within the client's timeout" },
  CLIENT_CLOSED: { retriable: false, audience: ["client"], doc: "the client was closed before the reply arrived" },
  CLIENT_SEND_FAILED: {
    retriable: true,
    audience: ["client"],
    doc: "the request could not be written to Kafka within the client's timeout (brokers unreachable)",
  },
  // sequences
  SEQUENCE_EXISTS: { retriable: false, audience: ["operator"], doc: "a sequence of that name exists already" },
  SEQUENCE_INVALID: { retriable: false, audience: ["operator"], doc: "the sequence definition is invalid; every problem is listed" },
  // formats and check digits (BAD_FIELDS and SERIAL_OVERFLOW travel in error replies, like the request codes)
  FORMAT_INVALID: {
    retriable: false,
    audience: ["reply"],
    doc: "the serial-number format template is invalid; every problem is listed with its position",
  },
  UNKNOWN_CHECK_ALGORITHM: {
    retriable: false,
    audience: ["operator"],
    doc: "the check-digit algorithm is not one idd knows; the message lists the known ones",
  },
  SERIAL_OVERFLOW: {
    retriable: false,
    audience: ["reply"],
    doc: "the serial has more digits than the format's {seq:N} prints, and the overflow policy is refuse; or it is past an obfuscated width's last serial",
  },
  OBFUSCATION_KEY_MISSING: {
    retriable: false,
    audience: ["reply"],
    doc: "the obfuscated sequence's key version is not among the keys this worker was given (IDD_OBFUSCATION_KEYS or IDD_OBFUSCATION_KEYS_FILE)",
  },
  OBFUSCATED_VALUE_INVALID: {
    retriable: false,
    audience: ["operator"],
    doc: "a value to decode is not one the sequence prints: not its template's shape or check, wrong width, not decimal digits, or a key version with no key",
  },
  BAD_FIELDS: {
    retriable: false,
    audience: ["reply"],
    doc: "the request's format fields are missing, unknown, too long or not A-Z a-z 0-9; every problem is listed",
  },
  // schema registry
  REGISTRY_UNAVAILABLE: { retriable: true, audience: ["operator", "reply"], doc: "the schema registry could not be reached" },
  REGISTRY_REJECTED: { retriable: "varies", audience: ["operator", "reply"], doc: "the schema registry answered with an error" },
  REGISTRY_AUTH_FAILED: {
    retriable: false,
    audience: ["operator", "reply"],
    doc: "the schema registry refused idd's credentials (HTTP 401) or their rights (HTTP 403)",
  },
  // credentials refused at connection (docs/operations.md: Security)
  KAFKA_AUTH_FAILED: {
    retriable: false,
    audience: ["operator", "reply"],
    doc: "a Kafka broker refused the SASL login (wrong user, password or mechanism)",
  },
  REDIS_AUTH_FAILED: {
    retriable: false,
    audience: ["operator"],
    doc: "Redis refused the login (wrong password or ACL user), or wants one and none was given",
  },
  KAFKA_TLS_FAILED: {
    retriable: false,
    audience: ["operator", "reply"],
    doc: "the Kafka brokers' TLS certificate is not trusted (unknown CA, wrong host name, expired): set KAFKA_SSL_CA_FILE to the CA that signed it",
  },
  STOP_TIMEOUT: {
    retriable: false,
    audience: ["operator"],
    doc: "a worker did not stop within IDD_STOP_TIMEOUT_MS of SIGTERM and exited without leaving its group",
  },
  KAFKA_UNAVAILABLE: {
    retriable: true,
    audience: ["operator"],
    doc: "topics the worker created were not served by the brokers (no leader in the metadata) within 30 s",
  },
  MONGODB_AUTH_FAILED: {
    retriable: false,
    audience: ["operator", "reply"],
    doc: "MongoDB refused the login (wrong user or password), or wants one and the URL has none",
  },
  MONGODB_TLS_FAILED: {
    retriable: false,
    audience: ["operator", "reply"],
    doc: "MongoDB's TLS certificate is not trusted: give the CA that signed it with tlsCAFile in MONGODB_URL",
  },
  REGISTRY_TLS_FAILED: {
    retriable: false,
    audience: ["operator", "reply"],
    doc: "the schema registry's TLS certificate is not trusted: set SCHEMA_REGISTRY_CA_FILE to the CA that signed it",
  },
  REDIS_TLS_FAILED: {
    retriable: false,
    audience: ["operator"],
    doc: "Redis's TLS certificate is not trusted (unknown CA, wrong host name, expired): set REDIS_CA_FILE to the CA that signed it",
  },
  // snowflake sequences (ids made in memory from time, a leased worker id and a per-unit counter)
  LEASE_LOST: {
    retriable: true,
    audience: ["reply"],
    doc: "this worker's snowflake worker-id lease lapsed (no successful renewal within its validity) or was taken over: it issues nothing until it acquires a lease again",
  },
  CLOCK_BACKWARDS: {
    retriable: true,
    audience: ["reply"],
    doc: "the clock is behind the last time this worker issued at, or behind the previous holder's issued-until bound, by more than the configured wait",
  },
  SNOWFLAKE_WAIT: {
    retriable: true,
    audience: ["reply"],
    doc: "no snowflake id can be issued this instant (the time unit's sequence is used up, the clock stepped back a little, or the lease's issued-until bound is reached): retry shortly, or use takeAsync, which waits",
  },
  WORKER_IDS_EXHAUSTED: {
    retriable: true,
    audience: ["reply"],
    doc: "every worker id of the snowflake sequence is leased by a live holder",
  },
  SNOWFLAKE_HOLD_OFF: {
    retriable: true,
    audience: ["reply"],
    doc: "the snowflake sequence's state in Redis was lost or comes from another primary (a flush, a restart, a failover; or the sequence predates first-lease records): new worker-id holders start one lease TTL later, so that no holder whose lease vanished can still be issuing; retry then",
  },
  // Redis scripts
  REDIS_STATE_MISSING: {
    retriable: true,
    audience: ["reply"],
    doc: "the Redis counter does not exist and could not be restored from MongoDB just now (the worker restores it on the next request)",
  },
  REDIS_STATE_SUSPECT: {
    retriable: true,
    audience: ["internal"],
    doc: "the Redis counter was written under another Redis node (a restart, a failover, or an older release): the worker restores it from MongoDB",
  },
  REDIS_STATE_LOST: {
    retriable: false,
    audience: ["reply"],
    doc: "Redis granted numbers this worker had already claimed: it went back in time without changing its node identity; run `idd replay`",
  },
  STATE_CONFLICT: {
    retriable: false,
    audience: ["operator", "reply"],
    doc: "a Redis counter is ahead of MongoDB's reservation: MongoDB lost reservations (restored from an old backup?); idd refuses to restore it by itself: run `idd replay` once MongoDB is known complete",
  },
  REDIS_FENCED: {
    retriable: true,
    audience: ["reply"],
    doc: "the Redis counter's epoch changed: a restore (a worker's or `idd replay`) is rewriting it or has rewritten it",
  },
  CLAIM_ABANDONED: {
    retriable: true,
    audience: ["internal"],
    doc: "a strict block's grant was refused: the counter's next claim had recorded the block as an abandoned claim first, so it is never used; the worker claims again",
  },
  REDIS_EXHAUSTED: {
    retriable: true,
    audience: ["internal"],
    doc: "the Redis counter reached its reservation (max); the reservation must be raised first",
  },
  REDIS_COUNTER_EXISTS: { retriable: false, audience: ["internal"], doc: "the Redis counter exists already and was left unchanged" },
  REDIS_SCRIPT_FAILED: { retriable: false, audience: ["internal"], doc: "a Redis script returned an unknown result" },
} as const satisfies Record<string, ErrorRow>;

export type ErrorCode = keyof typeof ERRORS;

/** Every code with its description (docs/wire-contract.md's error tables are checked against it). */
export const ErrorCodes: Readonly<Record<ErrorCode, string>> = Object.fromEntries(
  Object.entries(ERRORS).map(([code, row]) => [code, row.doc]),
) as Record<ErrorCode, string>;

/** Whether a code may travel in an error reply. */
export function isReplyCode(code: ErrorCode): boolean {
  return (ERRORS[code].audience as readonly Audience[]).includes("reply");
}

export class IddError extends Error {
  readonly code: ErrorCode;
  readonly retriable: boolean;

  /** `retriable` is read only for codes whose row says "varies"; every other code's comes from its row. */
  constructor(code: ErrorCode, message: string, options: { cause?: unknown; retriable?: boolean } = {}) {
    super(message, { cause: options.cause });
    this.name = "IddError";
    this.code = code;
    const row: ErrorRow = ERRORS[code];
    this.retriable = row.retriable === "varies" ? (options.retriable ?? false) : row.retriable;
  }
}

/** What a command prints for a failure: one line per problem, prefixed with the code when there is one. */
export function errorLines(e: unknown): string[] {
  if (e instanceof IddError) return e.message.split("\n").map((line) => `${e.code}: ${line}`);
  return [e instanceof Error ? e.message : String(e)];
}

export function isIddError(e: unknown, code?: ErrorCode): e is IddError {
  return e instanceof IddError && (code === undefined || e.code === code);
}
