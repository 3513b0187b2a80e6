import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { expect, test } from "vitest";
import { isIddError } from "../core/errors.js";
import { loadConfig } from "./config.js";
import { redactUrl, type Secret } from "./secret.js";
import { serviceSettings } from "./services.js";

const all = {
  KAFKA_BROKERS: "k1:9092",
  REDIS_URL: "redis://r:6379",
  MONGODB_URL: "mongodb://m:27017/idd",
  SCHEMA_REGISTRY_URL: "http://s:8081",
  IDD_STACK_DIR: "/nowhere",
};
const dir = mkdtempSync(join(tmpdir(), "idd-sec-"));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};
const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

function problems(env: Record<string, string>): string[] {
  try {
    serviceSettings({ ...all, ...env });
  } catch (e) {
    expect(isIddError(e, "CONFIG_INVALID")).toBe(true);
    return (e as Error).message.split("\n").slice(1);
  }
  return [];
}

test("Kafka TLS and SASL from the environment; the password from a file, its trailing newline dropped", () => {
  const s = serviceSettings({
    ...all,
    KAFKA_SSL: "true",
    KAFKA_SSL_CA_FILE: file("ca.pem", CA),
    KAFKA_SASL_MECHANISM: "SCRAM-SHA-512",
    KAFKA_SASL_USERNAME: "idd",
    KAFKA_SASL_PASSWORD_FILE: file("pw", "hunter2-kafka\n"),
  });
  const kafka = s?.security.kafka;
  expect(kafka?.tls).toEqual({ ca: CA });
  expect(kafka?.sasl?.mechanism).toBe("scram-sha-512");
  expect((kafka?.sasl?.password as Secret | undefined)?.reveal()).toBe("hunter2-kafka");
  // However the settings are printed, the password is not.
  for (const text of [JSON.stringify(s), inspect(s, { depth: 10 }), String(kafka?.sasl?.password)]) expect(text).not.toContain("hunter2");
});

test("every security problem is reported at once, naming variables and files, never values", () => {
  const found = problems({
    KAFKA_SSL: "yes",
    KAFKA_SSL_CERT_FILE: join(dir, "missing.pem"),
    KAFKA_SASL_MECHANISM: "gssapi",
    KAFKA_SASL_PASSWORD: "hunter2-a",
    KAFKA_SASL_PASSWORD_FILE: file("pw2", "hunter2-b"),
    SCHEMA_REGISTRY_URL: "http://u:hunter2-c@s:8081",
    SCHEMA_REGISTRY_USERNAME: "u",
    SCHEMA_REGISTRY_PASSWORD: "hunter2-d",
    REDIS_CA_FILE: file("not-pem", "hello"),
  });
  expect(found).toEqual([
    'KAFKA_SSL: "yes" is not true or false',
    `KAFKA_SSL_CERT_FILE: cannot read ${join(dir, "missing.pem")} (ENOENT)`,
    "KAFKA_SSL_*_FILE set but KAFKA_SSL is not true: set KAFKA_SSL=true to use TLS",
    "KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE go together: set both or neither",
    "KAFKA_SASL_PASSWORD and KAFKA_SASL_PASSWORD_FILE are both set: set one",
    'KAFKA_SASL_MECHANISM: "gssapi" is not one of plain, scram-sha-256, scram-sha-512',
    "KAFKA_SASL_MECHANISM is set but KAFKA_SASL_USERNAME is not",
    "KAFKA_SASL_MECHANISM is set but neither KAFKA_SASL_PASSWORD nor KAFKA_SASL_PASSWORD_FILE is",
    "SCHEMA_REGISTRY_URL carries user-info and SCHEMA_REGISTRY_USERNAME is set: give the credentials one way",
    `REDIS_CA_FILE: ${join(dir, "not-pem")} is not PEM (no -----BEGIN line)`,
    "REDIS_CA_FILE is set but REDIS_URL is not rediss:// (TLS)",
  ]);
  expect(found.join("\n")).not.toContain("hunter2");
  // An unparsable URL with a password in it is not echoed.
  expect(problems({ REDIS_URL: "redis://:hunter2@" }).join("\n")).not.toContain("hunter2");
});

test("IDD_HTTP_TOKEN or its file; short tokens refused; the token never printed", () => {
  const services = serviceSettings(all);
  if (!services) throw new Error("no settings");
  const c = loadConfig({ IDD_HTTP_TOKEN_FILE: file("token", "a-token-of-32-characters-or-so!!\n") }, services);
  expect(c.httpToken?.reveal()).toBe("a-token-of-32-characters-or-so!!");
  expect(JSON.stringify(c)).not.toContain("a-token");
  expect(() => loadConfig({ IDD_HTTP_TOKEN: "short" }, services)).toThrow(/IDD_HTTP_TOKEN: the token is shorter than 16 characters/);
});

test("redactUrl hides passwords in user-info and secret-looking query parameters", () => {
  expect(redactUrl("rediss://idd:hunter2@r:6380/0")).toBe("rediss://idd:***@r:6380/0");
  expect(redactUrl("mongodb://u:p%40ss@m:27017/idd?tls=true&tlsCertificateKeyFilePassword=x")).toBe(
    "mongodb://u:***@m:27017/idd?tls=true&tlsCertificateKeyFilePassword=***",
  );
  expect(redactUrl("not a url hunter2")).toBe("(unparsable URL)");
});
