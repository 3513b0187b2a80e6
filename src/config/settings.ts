/**
 * Every setting idd reads from the environment, one row each: the configuration's key, the
 * variable's name, the default, the range or allowed values, a group and what it means. From these
 * rows come DEFAULTS, the variable names, the limits loadConfig checks (config.ts), the names the
 * start-up warning knows (unknown-variables.ts) and the README's settings table (settings-doc.ts,
 * `npm run docs:settings`). Checks across settings (a minimum below a maximum) live in config.ts.
 *
 * The four service variables and their TLS and credential companions (KAFKA_*, REDIS_*, MONGODB_URL,
 * SCHEMA_REGISTRY_*) are not rows: services.ts and security.ts read and check them together (all
 * four or none, TLS files that go together), and the README documents them under Configuration and
 * Operations → Security.
 */

export type SettingValue = number | string | boolean;

export const SETTING_GROUPS = {
  kafka: "Kafka topics and consumer group",
  limits: "Request limits and overload (Wire contract)",
  sequences: "Sequences, retries and recovery",
  blocks: "Blocks, reservations and Redis",
  snowflake: "Snowflake sequences",
  obfuscation: "Obfuscated sequences",
  hooks: "Issuance hooks",
  ops: "Operations: HTTP surface, logs, worker id",
  tooling: "Repository tooling (the local stack and the tests; a worker reads only IDD_STACK_DIR)",
} as const;
export type SettingGroup = keyof typeof SETTING_GROUPS;

export interface SettingRow {
  /** The configuration's property (for rows loadConfig does not keep, a name all the same). */
  readonly key: string;
  readonly env: string;
  /** Rows with a default are read, checked and defaulted by loadConfig, and are in DEFAULTS. */
  readonly default?: SettingValue;
  /** The default in words, for rows without a plain one. */
  readonly defaultText?: string;
  /** Inclusive bounds of a number. */
  readonly range?: readonly [number, number];
  /** A number that may have a fraction; other numbers must be integers. */
  readonly fraction?: true;
  /** The values a string may take. */
  readonly values?: readonly string[];
  /** What a string must look like, and how to say so: `"bad topic" is not ${pattern[1]}`. */
  readonly pattern?: readonly [RegExp, string];
  /** A secret: may instead be given as `${env}_FILE`, naming a file that holds it; never printed. */
  readonly file?: true;
  /** Who reads the variable, when it is not loadConfig. */
  readonly readBy?: string;
  readonly group: SettingGroup;
  readonly doc: string;
}

const TOPIC = [/^[A-Za-z0-9._-]{1,249}$/, "a valid topic name"] as const;
const DAY_MS = 86_400_000;

/** The rows, grouped as the README shows them; loadConfig reports problems in this order. */
export const SETTINGS = [
  // kafka
  {
    key: "requestTopic",
    env: "IDD_REQUEST_TOPIC",
    default: "idd.requests",
    pattern: TOPIC,
    group: "kafka",
    doc: "The topic requests are read from.",
  },
  {
    key: "deadLetterTopic",
    env: "IDD_DLQ_TOPIC",
    default: "idd.requests.dlq",
    pattern: TOPIC,
    group: "kafka",
    doc: "Where requests no reply can be sent for go; must differ from the request topic.",
  },
  {
    key: "requestPartitions",
    env: "IDD_REQUEST_PARTITIONS",
    default: 6,
    range: [1, 10_000],
    group: "kafka",
    doc: "Partitions of the request topic, used when idd creates it.",
  },
  { key: "groupId", env: "IDD_GROUP_ID", default: "idd-workers", group: "kafka", doc: "The workers' consumer group." },
  {
    key: "sessionTimeoutMs",
    env: "IDD_SESSION_TIMEOUT_MS",
    default: 10_000,
    range: [3000, 300_000],
    group: "kafka",
    doc: "Consumer session timeout: a worker silent this long loses its partitions.",
  },
  {
    key: "heartbeatMs",
    env: "IDD_HEARTBEAT_MS",
    default: 1000,
    range: [100, 60_000],
    group: "kafka",
    doc: "Consumer heartbeat interval; at most a third of the session timeout.",
  },
  {
    key: "topicRefreshMs",
    env: "IDD_TOPIC_REFRESH_MS",
    default: 5000,
    range: [500, 300_000],
    group: "kafka",
    doc: "How often the request topic's partition count is asked for: added partitions are read, and sequences re-homed, about this long after (Wire contract → Routing).",
  },
  // limits
  {
    key: "maxCount",
    env: "IDD_MAX_COUNT",
    default: 10_000,
    range: [1, 1_000_000],
    group: "limits",
    doc: "Most numbers one request may ask for.",
  },
  {
    key: "maxFormatted",
    env: "IDD_MAX_FORMATTED",
    default: 1000,
    range: [0, 100_000],
    group: "limits",
    doc: "A formatted sequence's reply with more numbers than this carries ranges only (formattedOmitted).",
  },
  {
    key: "maxRequestBytes",
    env: "IDD_MAX_REQUEST_BYTES",
    default: 64 * 1024,
    range: [256, 10 * 1024 * 1024],
    group: "limits",
    doc: "Largest request record read.",
  },
  {
    key: "maxCorrelationIdBytes",
    env: "IDD_MAX_CORRELATION_ID_BYTES",
    default: 1024,
    range: [16, 64 * 1024],
    group: "limits",
    doc: "Longest correlation id accepted.",
  },
  {
    key: "maxHeaderBytes",
    env: "IDD_MAX_HEADER_BYTES",
    default: 16 * 1024,
    range: [256, 512 * 1024],
    group: "limits",
    doc: "Most header bytes a request may carry.",
  },
  {
    key: "stepRecords",
    env: "IDD_STEP_RECORDS",
    default: 1000,
    range: [1, 100_000],
    group: "limits",
    doc: "Records handled in one step of a fetched batch (parse, answer, record, send, commit).",
  },
  {
    key: "fetchMaxBytesPerPartition",
    env: "IDD_FETCH_MAX_BYTES_PER_PARTITION",
    default: 1024 * 1024,
    range: [64 * 1024, 64 * 1024 * 1024],
    group: "limits",
    doc: "What one fetch may bring per partition: bounds memory while a backlog drains.",
  },
  {
    key: "sendMaxRecords",
    env: "IDD_SEND_MAX_RECORDS",
    default: 500,
    range: [1, 10_000],
    group: "limits",
    doc: "Records per reply produce request.",
  },
  {
    key: "sendMaxBytes",
    env: "IDD_SEND_MAX_BYTES",
    default: 512 * 1024,
    range: [16 * 1024, 16 * 1024 * 1024],
    group: "limits",
    doc: "Bytes per reply produce request.",
  },
  {
    key: "sendConcurrency",
    env: "IDD_SEND_CONCURRENCY",
    default: 8,
    range: [1, 256],
    group: "limits",
    doc: "Reply produce requests in flight.",
  },
  {
    key: "replyRetryMs",
    env: "IDD_REPLY_RETRY_MS",
    default: 10_000,
    range: [0, 600_000],
    group: "limits",
    doc: "How long transient broker errors on replies are retried before the request is dead-lettered.",
  },
  // sequences
  {
    key: "autoCreateSequences",
    env: "IDD_AUTO_CREATE_SEQUENCES",
    default: false,
    group: "sequences",
    doc: "Create a counter sequence on its first request instead of answering UNKNOWN_SEQUENCE.",
  },
  {
    key: "sequenceCacheMs",
    env: "IDD_SEQUENCE_CACHE_MS",
    default: 5000,
    range: [0, 3_600_000],
    group: "sequences",
    doc: "How long a sequence's definition is kept in memory before it is read again.",
  },
  {
    key: "dedupeWindowMs",
    env: "IDD_DEDUPE_WINDOW_MS",
    default: 5 * 60_000,
    range: [0, 7 * DAY_MS],
    group: "sequences",
    doc: "How long an answer is kept for retries of its requestId; 0: off.",
  },
  {
    key: "replayOnStart",
    env: "IDD_REPLAY_ON_START",
    default: false,
    group: "sequences",
    doc: "Rebuild Redis from MongoDB at start when it lost its state (Recovery); `idd start` on the local stack sets it.",
  },
  // blocks
  {
    key: "minBlock",
    env: "IDD_MIN_BLOCK",
    default: 100,
    range: [1, 10_000_000],
    group: "blocks",
    doc: "Smallest block claimed from Redis.",
  },
  {
    key: "maxBlock",
    env: "IDD_MAX_BLOCK",
    default: 100_000,
    range: [1, 10_000_000],
    group: "blocks",
    doc: "Largest block claimed from Redis.",
  },
  {
    key: "initialBlock",
    env: "IDD_INITIAL_BLOCK",
    default: 1000,
    range: [1, 10_000_000],
    group: "blocks",
    doc: "A sequence's first block.",
  },
  {
    key: "targetBlockMs",
    env: "IDD_TARGET_BLOCK_MS",
    default: 10_000,
    range: [10, 3_600_000],
    group: "blocks",
    doc: "How long a block should last: it doubles when it lasts under half that, halves over twice.",
  },
  {
    key: "prefetchAt",
    env: "IDD_PREFETCH_AT",
    default: 0.5,
    range: [0, 1],
    fraction: true,
    group: "blocks",
    doc: "Claim the next block when this share of a block is left.",
  },
  {
    key: "reserveLowMs",
    env: "IDD_RESERVE_LOW_MS",
    default: 15 * 60_000,
    range: [0, DAY_MS],
    group: "blocks",
    doc: "Raise the reservation in MongoDB when less than this much consumption is reserved…",
  },
  {
    key: "reserveAheadMs",
    env: "IDD_RESERVE_AHEAD_MS",
    default: 30 * 60_000,
    range: [1, DAY_MS],
    group: "blocks",
    doc: "…by this much consumption's worth…",
  },
  {
    key: "minReservation",
    env: "IDD_MIN_RESERVATION",
    default: 10_000,
    range: [1, 1_000_000_000],
    group: "blocks",
    doc: "…and by at least this many numbers.",
  },
  {
    key: "flushMs",
    env: "IDD_FLUSH_MS",
    default: 200,
    range: [1, 60_000],
    group: "blocks",
    doc: "How often grants and reservations buffered in memory are appended to MongoDB.",
  },
  {
    key: "sampleMs",
    env: "IDD_SAMPLE_MS",
    default: 10_000,
    range: [100, 3_600_000],
    group: "blocks",
    doc: "How often a sequence's issue rate is sampled (block sizing, headroom).",
  },
  {
    key: "redisTimeoutMs",
    env: "IDD_REDIS_TIMEOUT_MS",
    default: 2000,
    range: [50, 60_000],
    group: "blocks",
    doc: "A Redis command that takes longer counts as Redis unreachable.",
  },
  // snowflake
  {
    key: "snowflakeLeaseTtlMs",
    env: "IDD_SNOWFLAKE_LEASE_TTL_MS",
    default: 10_000,
    range: [1000, 600_000],
    group: "snowflake",
    doc: "How long a worker-id lease lasts; give every worker of a pool the same (the hold-off after a replay is the TTL of the worker asking).",
  },
  {
    key: "snowflakeLeaseRenewMs",
    env: "IDD_SNOWFLAKE_LEASE_RENEW_MS",
    default: 3000,
    range: [100, 300_000],
    group: "snowflake",
    doc: "How often a lease is renewed; below TTL minus margin.",
  },
  {
    key: "snowflakeLeaseMarginMs",
    env: "IDD_SNOWFLAKE_LEASE_MARGIN_MS",
    default: 1000,
    range: [0, 60_000],
    group: "snowflake",
    doc: "How early before its lease ends a holder stops issuing.",
  },
  {
    key: "snowflakeMaxBackwardWaitMs",
    env: "IDD_SNOWFLAKE_MAX_BACKWARD_WAIT_MS",
    default: 10,
    range: [0, 10_000],
    group: "snowflake",
    doc: "A clock this far behind the latest snowflake time is waited out; further behind answers CLOCK_BACKWARDS.",
  },
  // obfuscation
  {
    key: "obfuscationKeys",
    env: "IDD_OBFUSCATION_KEYS",
    file: true,
    defaultText: "none",
    group: "obfuscation",
    doc: "AES keys by version, `version:base64key` comma-separated (in the file, one a line; # lines skipped); 16, 24 or 32 bytes each (`openssl rand -base64 32`). Never read from MongoDB, never printed.",
  },
  // hooks
  {
    key: "hooks",
    env: "IDD_HOOKS",
    default: "",
    defaultText: "none",
    group: "hooks",
    doc: "Issuance hooks, comma-separated, in order: idd:rate, idd:history, or module paths and package names (src/hooks/hook.ts).",
  },
  {
    key: "hookTimeoutMs",
    env: "IDD_HOOK_TIMEOUT_MS",
    default: 100,
    range: [1, 60_000],
    group: "hooks",
    doc: "Bound on a step's `before` hook calls together, and on each observer call.",
  },
  {
    key: "rateLogMs",
    env: "IDD_RATE_LOG_MS",
    default: 60_000,
    range: [0, DAY_MS],
    group: "hooks",
    doc: "How often the idd:rate hook logs the busiest sequences' rates; 0: never.",
  },
  {
    key: "denySequences",
    env: "IDD_DENY_SEQUENCES",
    defaultText: "none",
    readBy: "src/hooks/examples/deny-list.ts",
    group: "hooks",
    doc: "The sequences the example hook refuses, comma-separated.",
  },
  // ops
  {
    key: "httpPort",
    env: "IDD_HTTP_PORT",
    default: 0,
    range: [0, 65_535],
    group: "ops",
    doc: "Port of the HTTP surface (/metrics, /healthz, /readyz, /status); 0: off.",
  },
  {
    key: "httpHost",
    env: "IDD_HTTP_HOST",
    default: "127.0.0.1",
    group: "ops",
    doc: "Address the HTTP surface binds to (loopback unless you say otherwise).",
  },
  {
    key: "readyOutageBudgetMs",
    env: "IDD_READY_OUTAGE_BUDGET_MS",
    default: 30_000,
    range: [0, DAY_MS],
    group: "ops",
    doc: "How long Redis or MongoDB may be unreachable before /readyz says not ready.",
  },
  {
    key: "metricsMaxSequences",
    env: "IDD_METRICS_MAX_SEQUENCES",
    default: 100,
    range: [1, 100_000],
    group: "ops",
    doc: "Sequences with a label of their own in /metrics; the rest are counted as `other`.",
  },
  {
    key: "logLevel",
    env: "LOG_LEVEL",
    default: "info",
    values: ["fatal", "error", "warn", "info", "debug", "trace", "silent"],
    group: "ops",
    doc: "The log level (pino); logs go to stderr.",
  },
  {
    key: "workerId",
    env: "IDD_WORKER_ID",
    defaultText: "`<hostname>-<pid>`",
    group: "ops",
    doc: "This worker's name in logs, owner tokens, leases and the audit log.",
  },
  {
    key: "httpToken",
    env: "IDD_HTTP_TOKEN",
    file: true,
    defaultText: "none: open",
    group: "ops",
    doc: "Bearer token every path of the HTTP surface but the probes and the static /status page asks for; at least 16 characters (Operations → Security).",
  },
  // tooling
  {
    key: "stackDir",
    env: "IDD_STACK_DIR",
    defaultText: "`.stack`",
    readBy: "src/config/services.ts, stack/",
    group: "tooling",
    doc: "Where the local stack keeps its data and its env file; a worker with no service variables set reads the services from `<dir>/env`.",
  },
  {
    key: "stackPortBase",
    env: "IDD_STACK_PORT_BASE",
    defaultText: "29000",
    readBy: "stack/",
    group: "tooling",
    doc: "Moves every port of the local stack (base+379 redis, +92 kafka, +17 mongodb, +81 registry).",
  },
  {
    key: "stackReadyTimeoutS",
    env: "IDD_STACK_READY_TIMEOUT_S",
    defaultText: "180",
    readBy: "stack/",
    group: "tooling",
    doc: "How long each service of the local stack may take to become ready.",
  },
  {
    key: "cacheDir",
    env: "IDD_CACHE_DIR",
    defaultText: "`~/.cache/idd`",
    readBy: "stack/",
    group: "tooling",
    doc: "Where the local stack's services are installed, shared by checkouts.",
  },
  {
    key: "testServices",
    env: "IDD_TEST_SERVICES",
    defaultText: "the environment, else containers, else the stack",
    readBy: "test/global-setup.ts",
    group: "tooling",
    doc: "`stack` or `containers`: the services the tests use (Tests).",
  },
  {
    key: "testWorkerLogLevel",
    env: "IDD_TEST_WORKER_LOG_LEVEL",
    defaultText: "`info`",
    readBy: "test/support/workers.ts",
    group: "tooling",
    doc: "`LOG_LEVEL` of the worker processes tests start.",
  },
  {
    key: "chaosPortBase",
    env: "IDD_CHAOS_PORT_BASE",
    defaultText: "31000",
    readBy: "test/chaos/",
    group: "tooling",
    doc: "Port base of the chaos suite's private stack.",
  },
  {
    key: "chaosStackDir",
    env: "IDD_CHAOS_STACK_DIR",
    defaultText: "`.stack-chaos`",
    readBy: "test/chaos/",
    group: "tooling",
    doc: "Directory of the chaos suite's private stack.",
  },
] as const satisfies readonly SettingRow[];

/** A row of SETTINGS, with its literal types. */
type Row = (typeof SETTINGS)[number];
/** The rows loadConfig reads with a default. */
export type DefaultedRow = Extract<Row, { default: SettingValue }>;
export type DefaultedKey = DefaultedRow["key"];
export type Defaults = { readonly [R in DefaultedRow as R["key"]]: R["default"] };

/** Every default, by key. */
export const DEFAULTS: Defaults = Object.freeze(
  Object.fromEntries(SETTINGS.flatMap((r) => ("default" in r ? [[r.key, r.default]] : []))) as Defaults,
);

export function isDefaulted(row: SettingRow): row is SettingRow & { key: DefaultedKey; default: SettingValue } {
  return row.default !== undefined;
}

/** The row of a key. */
export function settingRow(key: Row["key"]): SettingRow {
  const row = SETTINGS.find((r) => r.key === key);
  if (!row) throw new Error(`no setting ${key}`);
  return row;
}
