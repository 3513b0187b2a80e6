/**
 * How idd authenticates to its services and which TLS certificates it trusts, from environment
 * variables beside the four service URLs (docs/operations.md: Security). Credentials for Redis and
 * MongoDB travel in their URLs (redis://user:pass@…, rediss://…, mongodb://user:pass@…/db?tls=true);
 * Kafka and the schema registry have variables of their own. Files are read here, once, so a
 * missing certificate is reported with every other problem at start-up.
 */
import { readFileSync } from "node:fs";
import { type Secret, secretFromEnv } from "./secret.js";

export const SASL_MECHANISMS = ["plain", "scram-sha-256", "scram-sha-512"] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];

export interface KafkaSecurity {
  /** TLS to the brokers; `ca` (PEM) replaces Node's trusted roots, `cert` and `key` (PEM) are a client certificate. */
  tls?: { ca?: string; cert?: string; key?: string };
  sasl?: { mechanism: SaslMechanism; username: string; password: string | Secret };
}

export interface RegistrySecurity {
  /** Basic auth; the URL's user-info is the other way to give it. */
  username?: string;
  password?: string | Secret;
  /** PEM of the CA an https registry's certificate is checked against (instead of Node's roots). */
  ca?: string;
}

export interface ServiceSecurity {
  kafka: KafkaSecurity;
  registry: RegistrySecurity;
  /** PEM of the CA a rediss:// server's certificate is checked against. */
  redisCa?: string;
}

/** Every variable this module reads (the *_FILE forms of the passwords too). */
export const SECURITY_VARS = [
  "KAFKA_SSL",
  "KAFKA_SSL_CA_FILE",
  "KAFKA_SSL_CERT_FILE",
  "KAFKA_SSL_KEY_FILE",
  "KAFKA_SASL_MECHANISM",
  "KAFKA_SASL_USERNAME",
  "KAFKA_SASL_PASSWORD",
  "KAFKA_SASL_PASSWORD_FILE",
  "REDIS_CA_FILE",
  "SCHEMA_REGISTRY_USERNAME",
  "SCHEMA_REGISTRY_PASSWORD",
  "SCHEMA_REGISTRY_PASSWORD_FILE",
  "SCHEMA_REGISTRY_CA_FILE",
] as const;

function pem(env: Record<string, string | undefined>, name: string, problems: string[]): string | undefined {
  const file = env[name];
  if (!file) return undefined;
  try {
    const text = readFileSync(file, "utf8");
    if (!text.includes("-----BEGIN ")) problems.push(`${name}: ${file} is not PEM (no -----BEGIN line)`);
    return text;
  } catch (e) {
    problems.push(`${name}: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    return undefined;
  }
}

/** Reads the security variables; `registryUrl` is checked for user-info given twice. Problems are appended. */
export function securityFromEnv(env: Record<string, string | undefined>, registryUrl: string, problems: string[]): ServiceSecurity {
  const kafka: KafkaSecurity = {};
  const ssl = env.KAFKA_SSL ?? "";
  if (!["", "true", "false", "1", "0"].includes(ssl)) problems.push(`KAFKA_SSL: "${ssl}" is not true or false`);
  const ca = pem(env, "KAFKA_SSL_CA_FILE", problems);
  const cert = pem(env, "KAFKA_SSL_CERT_FILE", problems);
  const key = pem(env, "KAFKA_SSL_KEY_FILE", problems);
  if (ssl === "true" || ssl === "1") kafka.tls = { ...(ca && { ca }), ...(cert && { cert }), ...(key && { key }) };
  else if (env.KAFKA_SSL_CA_FILE || env.KAFKA_SSL_CERT_FILE || env.KAFKA_SSL_KEY_FILE)
    problems.push("KAFKA_SSL_*_FILE set but KAFKA_SSL is not true: set KAFKA_SSL=true to use TLS");
  if (!env.KAFKA_SSL_CERT_FILE !== !env.KAFKA_SSL_KEY_FILE)
    problems.push("KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE go together: set both or neither");

  const mechanism = env.KAFKA_SASL_MECHANISM?.toLowerCase();
  const username = env.KAFKA_SASL_USERNAME;
  const password = secretFromEnv(env, "KAFKA_SASL_PASSWORD", problems);
  if (mechanism) {
    if (!SASL_MECHANISMS.includes(mechanism as SaslMechanism))
      problems.push(`KAFKA_SASL_MECHANISM: "${env.KAFKA_SASL_MECHANISM}" is not one of ${SASL_MECHANISMS.join(", ")}`);
    if (!username) problems.push("KAFKA_SASL_MECHANISM is set but KAFKA_SASL_USERNAME is not");
    if (!password) problems.push("KAFKA_SASL_MECHANISM is set but neither KAFKA_SASL_PASSWORD nor KAFKA_SASL_PASSWORD_FILE is");
    if (username && password) kafka.sasl = { mechanism: mechanism as SaslMechanism, username, password };
  } else if (username || password) {
    problems.push("KAFKA_SASL_USERNAME or KAFKA_SASL_PASSWORD set but KAFKA_SASL_MECHANISM is not (plain, scram-sha-256 or scram-sha-512)");
  }

  const registry: RegistrySecurity = {};
  const regUser = env.SCHEMA_REGISTRY_USERNAME;
  const regPassword = secretFromEnv(env, "SCHEMA_REGISTRY_PASSWORD", problems);
  if (regUser || regPassword) {
    if (!regUser || !regPassword) problems.push("SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD(_FILE) go together");
    if (hasUserInfo(registryUrl))
      problems.push("SCHEMA_REGISTRY_URL carries user-info and SCHEMA_REGISTRY_USERNAME is set: give the credentials one way");
    if (regUser && regPassword) Object.assign(registry, { username: regUser, password: regPassword });
  }
  const regCa = pem(env, "SCHEMA_REGISTRY_CA_FILE", problems);
  if (regCa) registry.ca = regCa;

  const redisCa = pem(env, "REDIS_CA_FILE", problems);
  return { kafka, registry, ...(redisCa && { redisCa }) };
}

function hasUserInfo(url: string): boolean {
  try {
    const u = new URL(url);
    return u.username !== "" || u.password !== "";
  } catch {
    return false;
  }
}
