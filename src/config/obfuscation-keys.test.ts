/** The obfuscation key variables as loadConfig reads them: one or the other, the text kept secret. */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { expect, test } from "vitest";
import { loadConfig } from "./config.js";

const services = {
  kafkaBrokers: ["k:1"],
  redisUrl: "redis://r",
  mongodbUrl: "mongodb://m",
  schemaRegistryUrl: "http://s",
  security: { kafka: {}, registry: {} },
  source: "test",
};
const KEY = "1:q5mG0C3kYz1b7oJ8Xv2L0g==";

test("IDD_OBFUSCATION_KEYS: the text, kept as a secret, its entries comma-separated", () => {
  const c = loadConfig({ IDD_OBFUSCATION_KEYS: KEY }, services);
  expect(c.obfuscationKeys?.text.reveal()).toBe(KEY);
  expect([c.obfuscationKeys?.origin, c.obfuscationKeys?.unit]).toEqual(["IDD_OBFUSCATION_KEYS", "entry"]);
  expect(inspect(c)).not.toContain("q5mG0C3k");
  expect(loadConfig({}, services).obfuscationKeys).toBeUndefined();
});

test("IDD_OBFUSCATION_KEYS_FILE: the file's text, one key a line; an unreadable file is one problem among the others", () => {
  const dir = mkdtempSync(join(tmpdir(), "idd-keys-"));
  const file = join(dir, "keys");
  writeFileSync(file, `${KEY}\n`);
  const c = loadConfig({ IDD_OBFUSCATION_KEYS_FILE: file }, services);
  expect([c.obfuscationKeys?.origin, c.obfuscationKeys?.unit]).toEqual([file, "line"]);
  expect(() => loadConfig({ IDD_OBFUSCATION_KEYS_FILE: join(dir, "missing"), IDD_MAX_COUNT: "0" }, services)).toThrow(
    /IDD_MAX_COUNT: 0 is outside[\s\S]*obfuscation keys: cannot read .*missing \(ENOENT\)/,
  );
  expect(() => loadConfig({ IDD_OBFUSCATION_KEYS_FILE: file, IDD_OBFUSCATION_KEYS: KEY }, services)).toThrow(
    /set IDD_OBFUSCATION_KEYS_FILE or IDD_OBFUSCATION_KEYS, not both/,
  );
});
