/** The local stack's env file, which idd reads when none of the four service variables is set. */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "vitest";
import { parseEnvFile, stackServiceSettings } from "../../stack/env-file.js";

const all = {
  KAFKA_BROKERS: "k1:9092, k2:9092",
  REDIS_URL: "redis://r:6379",
  MONGODB_URL: "mongodb://m:27017/idd",
  SCHEMA_REGISTRY_URL: "http://s:8081",
};

test("nothing set: the stack's env file, or undefined when there is none", () => {
  const dir = mkdtempSync(join(tmpdir(), "idd-env-"));
  expect(stackServiceSettings({ IDD_STACK_DIR: dir })).toBeUndefined();
  writeFileSync(
    join(dir, "env"),
    `${Object.entries(all)
      .map(([k, v]) => `${k}=${v}`)
      .join("\n")}\n`,
  );
  expect(stackServiceSettings({ IDD_STACK_DIR: dir })?.source).toBe(join(dir, "env"));
});

test("env files: KEY=VALUE lines, blanks and comments ignored", () => {
  expect(parseEnvFile("# c\n\nA=1\n B = x=y \r\nlower=no\n")).toEqual({ A: "1", B: "x=y" });
});
