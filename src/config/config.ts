/**
 * idd's configuration: the rows of settings.ts read from the environment, validated once at
 * start-up with every problem reported at once, and frozen.
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import zlib from "node:zlib";
import { IddError } from "../core/errors.js";
import { Secret, secretFromEnv } from "./secret.js";
import type { ServiceSettings } from "./services.js";
import { type DEFAULTS, type DefaultedKey, isDefaulted, SETTINGS, type SettingRow, settingRow } from "./settings.js";

export { DEFAULTS } from "./settings.js";

type Mutable<T> = {
  -readonly [K in keyof T]: T[K] extends number ? number : T[K] extends string ? string : T[K] extends boolean ? boolean : T[K];
};
export type Config = Readonly<
  Mutable<typeof DEFAULTS> & {
    workerId: string;
    services: ServiceSettings;
    /** Bearer token the HTTP surface asks for (IDD_HTTP_TOKEN or IDD_HTTP_TOKEN_FILE); none: open. */
    httpToken?: Secret;
    /** The obfuscation keys' text, unparsed (src/sequences/obfuscation/keys.ts parses it); none: no obfuscated sequences. */
    obfuscationKeys?: ObfuscationKeyText;
  }
>;

/** Obfuscation keys as given: the text, where it came from (a variable or a file), and how its entries are separated. */
export interface ObfuscationKeyText {
  readonly text: Secret;
  /** The variable's name or the file's path, for messages. */
  readonly origin: string;
  /** "entry": comma- or line-separated (the variable); "line": one a line, # and blank lines skipped (the file). */
  readonly unit: "entry" | "line";
}

/** The obfuscation keys: the variable, or `${OBFUSCATION_KEYS_ENV}_FILE` naming a file of them. */
export const OBFUSCATION_KEYS_ENV = settingRow("obfuscationKeys").env;
export const OBFUSCATION_KEYS_FILE_ENV = `${OBFUSCATION_KEYS_ENV}_FILE`;

/** Which of the two obfuscation key variables is set: the file's path, the variable's name, or neither; both is a problem. */
export function obfuscationKeySource(env: NodeJS.ProcessEnv, problems: string[]): { file: string } | { env: string } | undefined {
  const file = env[OBFUSCATION_KEYS_FILE_ENV];
  const keys = env[OBFUSCATION_KEYS_ENV];
  if (file && keys) problems.push(`set ${OBFUSCATION_KEYS_FILE_ENV} or ${OBFUSCATION_KEYS_ENV}, not both`);
  else if (file) return { file };
  else if (keys) return { env: OBFUSCATION_KEYS_ENV };
  return undefined;
}

/** The obfuscation keys' text from the variable or the file it names; problems name the file, never its text. */
function obfuscationKeyText(env: NodeJS.ProcessEnv, problems: string[]): ObfuscationKeyText | undefined {
  const source = obfuscationKeySource(env, problems);
  if (!source) return undefined;
  if ("env" in source) return { text: new Secret(env[source.env] ?? ""), origin: source.env, unit: "entry" };
  try {
    return { text: new Secret(readFileSync(source.file, "utf8")), origin: source.file, unit: "line" };
  } catch (e) {
    problems.push(`obfuscation keys: cannot read ${source.file} (${(e as NodeJS.ErrnoException).code ?? "unreadable"})`);
    return undefined;
  }
}

/** The HTTP surface's token: the variable, or `${HTTP_TOKEN_ENV}_FILE` naming a file that holds it. */
export const HTTP_TOKEN_ENV = settingRow("httpToken").env;

/** Setting → environment variable. */
export const ENV = Object.freeze(
  Object.fromEntries(SETTINGS.filter((r) => isDefaulted(r) || r.key === "workerId").map((r) => [r.key, r.env])),
) as Readonly<Record<DefaultedKey | "workerId", string>>;

/** The value of a row's variable, checked against the row; problems are appended. */
function read(row: SettingRow & { default: number | string | boolean }, raw: string, problems: string[]): number | string | boolean {
  const { env: name, default: def } = row;
  if (typeof def === "number") {
    const n = Number(raw);
    const [lo, hi] = row.range ?? [Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY];
    if (!Number.isFinite(n) || (!row.fraction && !Number.isInteger(n)))
      problems.push(`${name}: "${raw}" is not ${row.fraction ? "a number" : "an integer"}`);
    else if (n < lo || n > hi) problems.push(`${name}: ${n} is outside ${lo}..${hi}`);
    return n;
  }
  if (typeof def === "boolean") {
    if (!["true", "false", "1", "0"].includes(raw)) problems.push(`${name}: "${raw}" is not true or false`);
    return raw === "true" || raw === "1";
  }
  return raw;
}

/** A string's shape and allowed values, checked after every value is read. */
function checkText(row: SettingRow, value: unknown, problems: string[]): void {
  if (row.pattern && !row.pattern[0].test(String(value))) problems.push(`${row.env}: "${value}" is not ${row.pattern[1]}`);
  if (row.values && !row.values.includes(String(value))) problems.push(`${row.env}: "${value}" is not one of ${row.values.join(", ")}`);
}

export function loadConfig(env: NodeJS.ProcessEnv, services: ServiceSettings): Config {
  const problems: string[] = [];
  const out: Record<string, unknown> = { services, workerId: env[ENV.workerId] || `${hostname()}-${process.pid}` };
  for (const row of SETTINGS) {
    if (!isDefaulted(row)) continue;
    const raw = env[row.env];
    out[row.key] = raw === undefined || raw === "" ? row.default : read(row, raw, problems);
  }
  for (const row of SETTINGS) checkText(row, out[row.key], problems);
  if (out.requestTopic === out.deadLetterTopic) problems.push(`${ENV.deadLetterTopic} must differ from ${ENV.requestTopic}`);
  if (Number(out.minBlock) > Number(out.maxBlock)) problems.push(`${ENV.minBlock} must be ≤ ${ENV.maxBlock}`);
  if (Number(out.snowflakeLeaseRenewMs) >= Number(out.snowflakeLeaseTtlMs) - Number(out.snowflakeLeaseMarginMs))
    problems.push(
      `${ENV.snowflakeLeaseRenewMs} must be less than ${ENV.snowflakeLeaseTtlMs} minus ${ENV.snowflakeLeaseMarginMs}, or leases lapse between renewals`,
    );
  if (Number(out.heartbeatMs) * 3 > Number(out.sessionTimeoutMs))
    problems.push(`${ENV.heartbeatMs} must be at most a third of ${ENV.sessionTimeoutMs}`);
  const replication = Number(out.topicReplicationFactor);
  if (replication > 0 && Number(out.topicMinInsyncReplicas) > replication)
    problems.push(`${ENV.topicMinInsyncReplicas} must be at most ${ENV.topicReplicationFactor}`);
  if (out.replyCompression === "zstd" && typeof (zlib as { zstdCompress?: unknown }).zstdCompress !== "function")
    problems.push(`${settingRow("replyCompression").env}=zstd needs Node.js 22.15 or later to write zstd (this is ${process.version})`);
  const token = secretFromEnv(env, HTTP_TOKEN_ENV, problems);
  if (token && token.reveal().length < 16) problems.push(`${HTTP_TOKEN_ENV}: the token is shorter than 16 characters`);
  if (token) out.httpToken = token;
  const keys = obfuscationKeyText(env, problems);
  if (keys) out.obfuscationKeys = keys;
  if (problems.length > 0) throw new IddError("CONFIG_INVALID", `configuration:\n${problems.join("\n")}`);
  return Object.freeze(out) as Config;
}
