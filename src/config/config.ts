/**
 * idd's configuration: every default in one constant, every setting from one environment variable,
 * validated once at start-up with every problem reported at once, and frozen.
 */
import { hostname } from "node:os";
import { IddError } from "../errors.js";
import { type Secret, secretFromEnv } from "./secret.js";
import type { ServiceSettings } from "./services.js";

export const DEFAULTS = {
  requestTopic: "idd.requests",
  deadLetterTopic: "idd.requests.dlq",
  requestPartitions: 6,
  groupId: "idd-workers",
  maxCount: 10_000,
  /** A formatted sequence's reply with more numbers than this carries ranges only (formattedOmitted). */
  maxFormatted: 1000,
  maxRequestBytes: 64 * 1024,
  maxCorrelationIdBytes: 1024,
  maxHeaderBytes: 16 * 1024,
  /** Records handled in one step of a fetched batch (parse, answer, record, send, commit). */
  stepRecords: 1000,
  /** What one fetch may bring per partition: bounds memory while a backlog drains. */
  fetchMaxBytesPerPartition: 1024 * 1024,
  /** Reply produce requests: records and bytes per request, and requests in flight. */
  sendMaxRecords: 500,
  sendMaxBytes: 512 * 1024,
  sendConcurrency: 8,
  /** How long transient broker errors on replies are retried before the request is dead-lettered. */
  replyRetryMs: 10_000,
  autoCreateSequences: false,
  /** Issuance hooks, comma-separated: idd:rate, idd:history, or module paths (src/hooks/hook.ts). */
  hooks: "",
  /** Bound on a step's `before` hook calls together, and on each observer call. */
  hookTimeoutMs: 100,
  replayOnStart: false,
  dedupeWindowMs: 5 * 60_000,
  minBlock: 100,
  maxBlock: 100_000,
  initialBlock: 1000,
  targetBlockMs: 10_000,
  prefetchAt: 0.5,
  reserveLowMs: 15 * 60_000,
  reserveAheadMs: 30 * 60_000,
  minReservation: 10_000,
  flushMs: 200,
  sampleMs: 10_000,
  sequenceCacheMs: 5000,
  sessionTimeoutMs: 10_000,
  heartbeatMs: 1000,
  /** How often the request topic's partition count is asked for: partitions added are read about this long after. */
  topicRefreshMs: 5000,
  redisTimeoutMs: 2000,
  logLevel: "info",
  /** The HTTP surface (/metrics, /healthz, /readyz): 0 = off. */
  httpPort: 0,
  httpHost: "127.0.0.1",
  /** How long Redis or MongoDB may be unreachable before /readyz says not ready. */
  readyOutageBudgetMs: 30_000,
  /** Sequences with a label of their own in /metrics; the rest are counted as `other`. */
  metricsMaxSequences: 100,
  /** Snowflake worker-id leases (src/snowflake/lease.ts): TTL, renewal period, and how early a holder stops issuing. */
  snowflakeLeaseTtlMs: 10_000,
  snowflakeLeaseRenewMs: 3000,
  snowflakeLeaseMarginMs: 1000,
  /** A clock this far behind the latest snowflake time is waited out; further behind answers CLOCK_BACKWARDS. */
  snowflakeMaxBackwardWaitMs: 10,
} as const;

type Mutable<T> = {
  -readonly [K in keyof T]: T[K] extends number ? number : T[K] extends string ? string : T[K] extends boolean ? boolean : T[K];
};
export type Config = Readonly<
  Mutable<typeof DEFAULTS> & {
    workerId: string;
    services: ServiceSettings;
    /** Bearer token the HTTP surface asks for (IDD_HTTP_TOKEN or IDD_HTTP_TOKEN_FILE); none: open. */
    httpToken?: Secret;
  }
>;

/** The HTTP surface's token: the variable, or `${HTTP_TOKEN_ENV}_FILE` naming a file that holds it. */
export const HTTP_TOKEN_ENV = "IDD_HTTP_TOKEN";

/** Setting → environment variable. */
export const ENV: Record<keyof typeof DEFAULTS | "workerId", string> = {
  requestTopic: "IDD_REQUEST_TOPIC",
  deadLetterTopic: "IDD_DLQ_TOPIC",
  requestPartitions: "IDD_REQUEST_PARTITIONS",
  groupId: "IDD_GROUP_ID",
  maxCount: "IDD_MAX_COUNT",
  maxFormatted: "IDD_MAX_FORMATTED",
  maxRequestBytes: "IDD_MAX_REQUEST_BYTES",
  maxCorrelationIdBytes: "IDD_MAX_CORRELATION_ID_BYTES",
  maxHeaderBytes: "IDD_MAX_HEADER_BYTES",
  stepRecords: "IDD_STEP_RECORDS",
  fetchMaxBytesPerPartition: "IDD_FETCH_MAX_BYTES_PER_PARTITION",
  sendMaxRecords: "IDD_SEND_MAX_RECORDS",
  sendMaxBytes: "IDD_SEND_MAX_BYTES",
  sendConcurrency: "IDD_SEND_CONCURRENCY",
  replyRetryMs: "IDD_REPLY_RETRY_MS",
  autoCreateSequences: "IDD_AUTO_CREATE_SEQUENCES",
  hooks: "IDD_HOOKS",
  hookTimeoutMs: "IDD_HOOK_TIMEOUT_MS",
  replayOnStart: "IDD_REPLAY_ON_START",
  dedupeWindowMs: "IDD_DEDUPE_WINDOW_MS",
  minBlock: "IDD_MIN_BLOCK",
  maxBlock: "IDD_MAX_BLOCK",
  initialBlock: "IDD_INITIAL_BLOCK",
  targetBlockMs: "IDD_TARGET_BLOCK_MS",
  prefetchAt: "IDD_PREFETCH_AT",
  reserveLowMs: "IDD_RESERVE_LOW_MS",
  reserveAheadMs: "IDD_RESERVE_AHEAD_MS",
  minReservation: "IDD_MIN_RESERVATION",
  flushMs: "IDD_FLUSH_MS",
  sampleMs: "IDD_SAMPLE_MS",
  sequenceCacheMs: "IDD_SEQUENCE_CACHE_MS",
  sessionTimeoutMs: "IDD_SESSION_TIMEOUT_MS",
  heartbeatMs: "IDD_HEARTBEAT_MS",
  topicRefreshMs: "IDD_TOPIC_REFRESH_MS",
  redisTimeoutMs: "IDD_REDIS_TIMEOUT_MS",
  logLevel: "LOG_LEVEL",
  httpPort: "IDD_HTTP_PORT",
  httpHost: "IDD_HTTP_HOST",
  readyOutageBudgetMs: "IDD_READY_OUTAGE_BUDGET_MS",
  metricsMaxSequences: "IDD_METRICS_MAX_SEQUENCES",
  snowflakeLeaseTtlMs: "IDD_SNOWFLAKE_LEASE_TTL_MS",
  snowflakeLeaseRenewMs: "IDD_SNOWFLAKE_LEASE_RENEW_MS",
  snowflakeLeaseMarginMs: "IDD_SNOWFLAKE_LEASE_MARGIN_MS",
  snowflakeMaxBackwardWaitMs: "IDD_SNOWFLAKE_MAX_BACKWARD_WAIT_MS",
  workerId: "IDD_WORKER_ID",
};

const LIMITS: Partial<Record<keyof typeof DEFAULTS, [number, number]>> = {
  requestPartitions: [1, 10_000],
  maxCount: [1, 1_000_000],
  maxFormatted: [0, 100_000],
  maxRequestBytes: [256, 10 * 1024 * 1024],
  maxCorrelationIdBytes: [16, 64 * 1024],
  maxHeaderBytes: [256, 512 * 1024],
  stepRecords: [1, 100_000],
  fetchMaxBytesPerPartition: [64 * 1024, 64 * 1024 * 1024],
  sendMaxRecords: [1, 10_000],
  sendMaxBytes: [16 * 1024, 16 * 1024 * 1024],
  sendConcurrency: [1, 256],
  replyRetryMs: [0, 600_000],
  hookTimeoutMs: [1, 60_000],
  minBlock: [1, 10_000_000],
  maxBlock: [1, 10_000_000],
  initialBlock: [1, 10_000_000],
  targetBlockMs: [10, 3_600_000],
  prefetchAt: [0, 1],
  reserveLowMs: [0, 86_400_000],
  reserveAheadMs: [1, 86_400_000],
  minReservation: [1, 1_000_000_000],
  flushMs: [1, 60_000],
  dedupeWindowMs: [0, 7 * 86_400_000],
  sampleMs: [100, 3_600_000],
  sequenceCacheMs: [0, 3_600_000],
  sessionTimeoutMs: [3000, 300_000],
  heartbeatMs: [100, 60_000],
  topicRefreshMs: [500, 300_000],
  redisTimeoutMs: [50, 60_000],
  httpPort: [0, 65_535],
  readyOutageBudgetMs: [0, 86_400_000],
  metricsMaxSequences: [1, 100_000],
  snowflakeLeaseTtlMs: [1000, 600_000],
  snowflakeLeaseRenewMs: [100, 300_000],
  snowflakeLeaseMarginMs: [0, 60_000],
  snowflakeMaxBackwardWaitMs: [0, 10_000],
};

const TOPIC = /^[A-Za-z0-9._-]{1,249}$/;
const LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

export function loadConfig(env: NodeJS.ProcessEnv, services: ServiceSettings): Config {
  const problems: string[] = [];
  const out: Record<string, unknown> = { services, workerId: env[ENV.workerId] || `${hostname()}-${process.pid}` };
  for (const [key, def] of Object.entries(DEFAULTS) as [keyof typeof DEFAULTS, unknown][]) {
    const name = ENV[key];
    const raw = env[name];
    if (raw === undefined || raw === "") {
      out[key] = def;
      continue;
    }
    if (typeof def === "number") {
      const n = Number(raw);
      const [lo, hi] = LIMITS[key] ?? [Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY];
      if (!Number.isFinite(n) || (key !== "prefetchAt" && !Number.isInteger(n)))
        problems.push(`${name}: "${raw}" is not ${key === "prefetchAt" ? "a number" : "an integer"}`);
      else if (n < lo || n > hi) problems.push(`${name}: ${n} is outside ${lo}..${hi}`);
      out[key] = n;
    } else if (typeof def === "boolean") {
      if (!["true", "false", "1", "0"].includes(raw)) problems.push(`${name}: "${raw}" is not true or false`);
      out[key] = raw === "true" || raw === "1";
    } else {
      out[key] = raw;
    }
  }
  for (const k of ["requestTopic", "deadLetterTopic"] as const) {
    if (!TOPIC.test(String(out[k]))) problems.push(`${ENV[k]}: "${out[k]}" is not a valid topic name`);
  }
  if (out.requestTopic === out.deadLetterTopic) problems.push(`${ENV.deadLetterTopic} must differ from ${ENV.requestTopic}`);
  if (!LEVELS.includes(String(out.logLevel))) problems.push(`${ENV.logLevel}: "${out.logLevel}" is not one of ${LEVELS.join(", ")}`);
  if (Number(out.minBlock) > Number(out.maxBlock)) problems.push(`${ENV.minBlock} must be ≤ ${ENV.maxBlock}`);
  if (Number(out.snowflakeLeaseRenewMs) >= Number(out.snowflakeLeaseTtlMs) - Number(out.snowflakeLeaseMarginMs))
    problems.push(
      `${ENV.snowflakeLeaseRenewMs} must be less than ${ENV.snowflakeLeaseTtlMs} minus ${ENV.snowflakeLeaseMarginMs}, or leases lapse between renewals`,
    );
  if (Number(out.heartbeatMs) * 3 > Number(out.sessionTimeoutMs))
    problems.push(`${ENV.heartbeatMs} must be at most a third of ${ENV.sessionTimeoutMs}`);
  const token = secretFromEnv(env, HTTP_TOKEN_ENV, problems);
  if (token && token.reveal().length < 16) problems.push(`${HTTP_TOKEN_ENV}: the token is shorter than 16 characters`);
  if (token) out.httpToken = token;
  if (problems.length > 0) throw new IddError("CONFIG_INVALID", `configuration:\n${problems.join("\n")}`);
  return Object.freeze(out) as Config;
}
