import { expect, test } from "vitest";
import { DEFAULTS, loadConfig } from "./config.js";

const services = {
  kafkaBrokers: ["k:1"],
  redisUrl: "redis://r",
  mongodbUrl: "mongodb://m",
  schemaRegistryUrl: "http://s",
  security: { kafka: {}, registry: {} },
  source: "test",
};

test("defaults apply when nothing is set, and the result is frozen", () => {
  const c = loadConfig({}, services);
  expect(c.requestTopic).toBe(DEFAULTS.requestTopic);
  expect(c.maxCount).toBe(10_000);
  expect(Object.isFrozen(c)).toBe(true);
});

test("environment variables override defaults with their types", () => {
  const c = loadConfig({ IDD_MAX_COUNT: "50", IDD_AUTO_CREATE_SEQUENCES: "true", IDD_PREFETCH_AT: "0.25", IDD_WORKER_ID: "w7" }, services);
  expect([c.maxCount, c.autoCreateSequences, c.prefetchAt, c.workerId]).toEqual([50, true, 0.25, "w7"]);
});

test("every problem is reported at once", () => {
  expect(() =>
    loadConfig(
      { IDD_MAX_COUNT: "0", IDD_MIN_BLOCK: "x", IDD_REQUEST_TOPIC: "bad topic", IDD_AUTO_CREATE_SEQUENCES: "yes", LOG_LEVEL: "loud" },
      services,
    ),
  ).toThrow(
    /IDD_MAX_COUNT: 0 is outside 1..1000000\nIDD_AUTO_CREATE_SEQUENCES: "yes" is not true or false\nIDD_MIN_BLOCK: "x" is not an integer\nIDD_REQUEST_TOPIC: "bad topic" is not a valid topic name\nLOG_LEVEL: "loud"/,
  );
});

test("snowflake lease settings: a renewal period that would let leases lapse is refused", () => {
  const c = loadConfig({ IDD_SNOWFLAKE_LEASE_TTL_MS: "5000", IDD_SNOWFLAKE_MAX_BACKWARD_WAIT_MS: "50" }, services);
  expect([c.snowflakeLeaseTtlMs, c.snowflakeLeaseRenewMs, c.snowflakeMaxBackwardWaitMs]).toEqual([5000, 3000, 50]);
  expect(() => loadConfig({ IDD_SNOWFLAKE_LEASE_TTL_MS: "4000" }, services)).toThrow(
    /IDD_SNOWFLAKE_LEASE_RENEW_MS must be less than IDD_SNOWFLAKE_LEASE_TTL_MS minus IDD_SNOWFLAKE_LEASE_MARGIN_MS/,
  );
});

test("IDD_CAPACITY_WARN_DAYS: days with a fraction, 0 to 3650", () => {
  expect(loadConfig({}, services).capacityWarnDays).toBe(30);
  expect(loadConfig({ IDD_CAPACITY_WARN_DAYS: "0.5" }, services).capacityWarnDays).toBe(0.5);
  expect(loadConfig({ IDD_CAPACITY_WARN_DAYS: "0" }, services).capacityWarnDays).toBe(0);
  expect(() => loadConfig({ IDD_CAPACITY_WARN_DAYS: "-1" }, services)).toThrow(/IDD_CAPACITY_WARN_DAYS: -1 is outside 0..3650/);
  expect(() => loadConfig({ IDD_CAPACITY_WARN_DAYS: "a month" }, services)).toThrow(/IDD_CAPACITY_WARN_DAYS: "a month"/);
});
