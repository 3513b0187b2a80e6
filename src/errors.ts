/**
 * One error type for the whole project. Every failure a user or a client can see carries a stable
 * `code` from the list below; error replies carry the same codes, so clients can switch on them.
 */
export const ErrorCodes = {
  // configuration
  CONFIG_INVALID: "configuration is invalid; every problem is listed in the message",
  // local stack (npm run stack)
  STACK_TOOL_MISSING: "a tool the local stack needs to install or run a service is not installed",
  STACK_PORT_IN_USE: "a port the local stack wants is taken by a process it did not start",
  STACK_NOT_READY: "a local stack service did not become ready in time",
  STACK_EXITED: "a local stack service exited while starting",
  STACK_INSTALL_FAILED: "installing a local stack service failed",
  // requests: these codes travel in error replies (and dead-letter records); clients switch on them
  BAD_FRAME: "the value is neither JSON nor Confluent-framed Avro",
  BAD_AVRO: "the Avro body does not decode with the schema its frame names",
  UNKNOWN_SCHEMA_ID: "the frame names a schema id the registry does not know",
  SCHEMA_INCOMPATIBLE: "the writer schema cannot be read as idd.v1.IdRequest",
  BAD_JSON: "the value starts with { but is not valid JSON",
  BAD_REQUEST: "a required field is missing or has the wrong type",
  REQUEST_TOO_LARGE: "the value is larger than the configured maximum request size",
  NO_REPLY_ADDRESS: "neither a kafka_replyTopic header nor a replyTo field: the request goes to the dead-letter topic",
  // a reply that can never be delivered: the request goes to the dead-letter topic with one of these
  REPLY_TOPIC_INVALID: "the reply topic is not a legal topic name, is internal to Kafka (__…), or is one of idd's own topics",
  REPLY_TOPIC_UNKNOWN: "the reply topic does not exist (idd never creates reply topics)",
  REPLY_PARTITION_INVALID: "kafka_replyPartition is unreadable, negative, or not a partition of the reply topic",
  CORRELATION_ID_TOO_LARGE: "kafka_correlationId is longer than the configured maximum (it is echoed on the reply)",
  HEADERS_TOO_LARGE: "the request's headers together are larger than the configured maximum",
  REPLY_REFUSED: "the broker refused the reply for good (too large, not authorised, invalid topic); its reason is attached",
  REPLY_FAILED: "the reply could not be written within the configured retry time (transient broker errors); the reason is attached",
  INVALID_SEQUENCE_NAME: "the sequence name is empty, too long or has characters outside A-Z a-z 0-9 . _ -",
  KEY_MISMATCH: "the message key is not the sequence name",
  INVALID_COUNT: "count is not between 1 and the configured maximum",
  UNKNOWN_SEQUENCE: "no sequence of that name is defined",
  DEADLINE_EXCEEDED: "the request's deadline passed before it could be answered",
  SEQUENCE_EXHAUSTED:
    "the sequence (in this period, for one that restarts) reached its maxValue; for a formatted sequence whose overflow is refuse, that is the largest serial its {seq:N} prints",
  UNAVAILABLE: "numbers cannot be issued now: Redis or MongoDB is unavailable and no headroom is left",
  HOOK_REFUSED: "an issuance hook (IDD_HOOKS) refused the request before numbers were issued; its reason is attached",
  HOOK_INVALID: "a module named in IDD_HOOKS could not be loaded or does not export an issuance hook",
  INTERNAL: "an unexpected error; the message says more",
  WORKER_FENCED: "this worker no longer owns the request partition: it publishes nothing and the new owner answers",
  ROUTE_STALE:
    "the request topic has more partitions than this worker routed by: it publishes nothing, learns the new count and routes the requests again",
  UNROUTABLE:
    "the request was forwarded between workers too often without reaching its sequence's home partition (workers disagree on the request topic's partition count); retry",
  // operations (idd status)
  STATUS_UNAVAILABLE:
    "a worker's /status.json could not be read: not running, no IDD_HTTP_PORT, not reachable, or not an idd of this version",
  // client
  CLIENT_TIMEOUT: "no reply arrived within the client's timeout",
  CLIENT_CLOSED: "the client was closed before the reply arrived",
  CLIENT_SEND_FAILED: "the request could not be written to Kafka within the client's timeout (brokers unreachable)",
  // sequences
  SEQUENCE_EXISTS: "a sequence of that name exists already",
  SEQUENCE_INVALID: "the sequence definition is invalid; every problem is listed",
  // formats and check digits (BAD_FIELDS and SERIAL_OVERFLOW travel in error replies, like the request codes)
  FORMAT_INVALID: "the serial-number format template is invalid; every problem is listed with its position",
  UNKNOWN_CHECK_ALGORITHM: "the check-digit algorithm is not one idd knows; the message lists the known ones",
  SERIAL_OVERFLOW:
    "the serial has more digits than the format's {seq:N} prints, and the overflow policy is refuse; or it is past an obfuscated width's last serial",
  OBFUSCATION_KEY_MISSING:
    "the obfuscated sequence's key version is not among the keys this worker was given (IDD_OBFUSCATION_KEYS or IDD_OBFUSCATION_KEYS_FILE)",
  OBFUSCATED_VALUE_INVALID:
    "a value to decode is not one the sequence prints: not its template's shape or check, wrong width, not decimal digits, or a key version with no key",
  BAD_FIELDS: "the request's format fields are missing, unknown, too long or not A-Z a-z 0-9; every problem is listed",
  // schema registry
  REGISTRY_UNAVAILABLE: "the schema registry could not be reached",
  REGISTRY_REJECTED: "the schema registry answered with an error",
  REGISTRY_AUTH_FAILED: "the schema registry refused idd's credentials (HTTP 401) or their rights (HTTP 403)",
  // credentials refused at connection (README: Operations → Security)
  KAFKA_AUTH_FAILED: "a Kafka broker refused the SASL login (wrong user, password or mechanism)",
  REDIS_AUTH_FAILED: "Redis refused the login (wrong password or ACL user), or wants one and none was given",
  KAFKA_TLS_FAILED:
    "the Kafka brokers' TLS certificate is not trusted (unknown CA, wrong host name, expired): set KAFKA_SSL_CA_FILE to the CA that signed it",
  MONGODB_AUTH_FAILED: "MongoDB refused the login (wrong user or password), or wants one and the URL has none",
  MONGODB_TLS_FAILED: "MongoDB's TLS certificate is not trusted: give the CA that signed it with tlsCAFile in MONGODB_URL",
  REGISTRY_TLS_FAILED: "the schema registry's TLS certificate is not trusted: set SCHEMA_REGISTRY_CA_FILE to the CA that signed it",
  REDIS_TLS_FAILED:
    "Redis's TLS certificate is not trusted (unknown CA, wrong host name, expired): set REDIS_CA_FILE to the CA that signed it",
  // snowflake sequences (ids made in memory from time, a leased worker id and a per-unit counter)
  LEASE_LOST:
    "this worker's snowflake worker-id lease lapsed (no successful renewal within its validity) or was taken over: it issues nothing until it acquires a lease again",
  CLOCK_BACKWARDS:
    "the clock is behind the last time this worker issued at, or behind the previous holder's issued-until bound, by more than the configured wait",
  SNOWFLAKE_WAIT:
    "no snowflake id can be issued this instant (the time unit's sequence is used up, the clock stepped back a little, or the lease's issued-until bound is reached): retry shortly, or use takeAsync, which waits",
  WORKER_IDS_EXHAUSTED: "every worker id of the snowflake sequence is leased by a live holder",
  SNOWFLAKE_HOLD_OFF:
    "Redis lost its state and idd's marker was written again (replay, or what looked like a new installation): snowflake ids resume one lease TTL later, so that no holder whose lease vanished can still be issuing; retry then",
  // Redis scripts
  REDIS_STATE_MISSING: "the Redis counter does not exist: Redis lost its state or it was never initialised",
  REDIS_STATE_LOST:
    "Redis lost its state (restarted empty, flushed, or went backwards): numbers are refused until `idd replay` rebuilds it",
  REDIS_FENCED: "the Redis counter's epoch changed: a replay is rewriting it or has rewritten it",
  REDIS_EXHAUSTED: "the Redis counter reached its reservation (max); the reservation must be raised first",
  REDIS_COUNTER_EXISTS: "the Redis counter exists already and was left unchanged",
  REDIS_SCRIPT_FAILED: "a Redis script returned an unknown result",
} as const;

export type ErrorCode = keyof typeof ErrorCodes;

export class IddError extends Error {
  readonly code: ErrorCode;
  readonly retriable: boolean;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; retriable?: boolean } = {}) {
    super(message, { cause: options.cause });
    this.name = "IddError";
    this.code = code;
    this.retriable = options.retriable ?? false;
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
