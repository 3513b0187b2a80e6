import { expect, test } from "vitest";
import { isIddError } from "../core/errors.js";
import { serviceSettings } from "./services.js";

const all = {
  KAFKA_BROKERS: "k1:9092, k2:9092",
  REDIS_URL: "redis://r:6379",
  MONGODB_URL: "mongodb://m:27017/idd",
  SCHEMA_REGISTRY_URL: "http://s:8081",
};

test("all four variables set: they are used, brokers split and trimmed", () => {
  expect(serviceSettings({ ...all, IDD_STACK_DIR: "/nowhere" })).toEqual({
    kafkaBrokers: ["k1:9092", "k2:9092"],
    redisUrl: "redis://r:6379",
    mongodbUrl: "mongodb://m:27017/idd",
    schemaRegistryUrl: "http://s:8081",
    security: { kafka: {}, registry: {} },
    source: "environment",
  });
});

test("some but not all set is an error naming the missing ones", () => {
  const { MONGODB_URL: _m, SCHEMA_REGISTRY_URL: _s, ...half } = all;
  expect(() => serviceSettings({ ...half, IDD_STACK_DIR: "/nowhere" })).toThrow(/MONGODB_URL, SCHEMA_REGISTRY_URL not/);
});

test("every bad value is reported at once, with a stable code", () => {
  let caught: unknown;
  try {
    serviceSettings({
      KAFKA_BROKERS: "k1",
      REDIS_URL: "http://r",
      MONGODB_URL: "nope",
      SCHEMA_REGISTRY_URL: "ftp://s",
      IDD_STACK_DIR: "/nowhere",
    });
  } catch (e) {
    caught = e;
  }
  expect(isIddError(caught, "CONFIG_INVALID")).toBe(true);
  const lines = (caught as Error).message.split("\n").slice(1);
  expect(lines).toEqual([
    'KAFKA_BROKERS: "k1" is not host:port',
    "REDIS_URL: protocol must be redis: or rediss:, got http:",
    'MONGODB_URL: "nope" is not a URL',
    "SCHEMA_REGISTRY_URL: protocol must be http: or https:, got ftp:",
  ]);
});
