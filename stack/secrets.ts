/**
 * The secured side of the local stack: passwords generated once per stack folder (secrets.json,
 * mode 0600, never in git: the stack folders are ignored) and the settings that reach the secured endpoints
 * (secured.env, idd's own variable names), beside the open ones the rest of the suite uses:
 * - Kafka: a SASL_SSL listener (TLS with the stack's own CA, stack/tls.ts, and a client certificate
 *   required; PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; user `idd`);
 * - Redis: a second redis-server with requirepass (`redis-auth`);
 * - MongoDB: a second FerretDB that wants a login and speaks only TLS (`mongodb-auth`: user `idd` in
 *   database `idd`);
 * - the registry: HTTP basic auth (Quarkus embedded user `idd`) on every /apis path, so every
 *   test that uses the registry goes through it (the URL carries the user-info); the secured
 *   settings reach it over https (its second port).
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { StackLayout } from "./paths.js";
import { stackTls } from "./tls.js";

export interface StackSecrets {
  kafkaPassword: string;
  redisPassword: string;
  registryPassword: string;
  mongodbPassword: string;
}

/** The one user name of every secured endpoint. */
export const STACK_USER = "idd";

const secretsFile = (l: StackLayout) => join(l.dir, "secrets.json");
export const securedEnvFile = (l: StackLayout) => join(l.dir, "secured.env");

/** The stack's passwords: those already in secrets.json kept, missing ones (an older stack folder) generated. */
export function stackSecrets(l: StackLayout): StackSecrets {
  const file = secretsFile(l);
  const kept = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Partial<StackSecrets>) : {};
  const pw = () => randomBytes(18).toString("base64url");
  const secrets: StackSecrets = {
    kafkaPassword: kept.kafkaPassword ?? pw(),
    redisPassword: kept.redisPassword ?? pw(),
    registryPassword: kept.registryPassword ?? pw(),
    mongodbPassword: kept.mongodbPassword ?? pw(),
  };
  if (Object.keys(kept).length < Object.keys(secrets).length) {
    mkdirSync(l.dir, { recursive: true });
    writeFileSync(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
  }
  return secrets;
}

/** idd's settings for the secured endpoints (SCRAM-SHA-512 over TLS to Kafka, password Redis, basic-auth registry). */
export function securedEnv(l: StackLayout): Record<string, string> {
  const s = stackSecrets(l);
  const tls = stackTls(l);
  return {
    KAFKA_BROKERS: `127.0.0.1:${l.ports.kafkaSasl}`,
    KAFKA_SSL: "true",
    KAFKA_SSL_CA_FILE: tls.caFile,
    KAFKA_SSL_CERT_FILE: tls.clientCertFile,
    KAFKA_SSL_KEY_FILE: tls.clientKeyFile,
    KAFKA_SASL_MECHANISM: "scram-sha-512",
    KAFKA_SASL_USERNAME: STACK_USER,
    KAFKA_SASL_PASSWORD: s.kafkaPassword,
    REDIS_URL: `redis://:${s.redisPassword}@127.0.0.1:${l.ports.redisAuth}`,
    MONGODB_URL: `mongodb://${STACK_USER}:${s.mongodbPassword}@127.0.0.1:${l.ports.mongodbAuth}/idd?authSource=idd&tls=true&tlsCAFile=${encodeURIComponent(tls.caFile)}`,
    SCHEMA_REGISTRY_URL: `https://${STACK_USER}:${s.registryPassword}@127.0.0.1:${l.ports.registryTls}/apis/ccompat/v7`,
    SCHEMA_REGISTRY_CA_FILE: tls.caFile,
  };
}

export function writeSecuredEnv(l: StackLayout): void {
  const env = securedEnv(l);
  writeFileSync(
    securedEnvFile(l),
    `${Object.entries(env)
      .map(([k, v]) => `${k}=${v}`)
      .join("\n")}\n`,
    { mode: 0o600 },
  );
}
