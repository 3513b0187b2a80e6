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
    redisTopology: { mode: "standalone" },
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

test("Redis under Sentinel or as a cluster: parsed; contradicting variables are CONFIG_INVALID, all listed", () => {
  const env = { ...all, IDD_STACK_DIR: "/nowhere" };
  expect(serviceSettings({ ...env, REDIS_SENTINELS: "s1:26379, [::1]:26380", REDIS_SENTINEL_MASTER: "idd" })?.redisTopology).toEqual({
    mode: "sentinel",
    sentinels: [
      { host: "s1", port: 26379 },
      { host: "::1", port: 26380 },
    ],
    master: "idd",
  });
  const withPassword = serviceSettings({
    ...env,
    REDIS_SENTINELS: "s1:26379",
    REDIS_SENTINEL_MASTER: "idd",
    REDIS_SENTINEL_PASSWORD: "pw",
  });
  expect(JSON.stringify(withPassword?.redisTopology)).not.toContain("pw");
  expect(serviceSettings({ ...env, REDIS_CLUSTER_NODES: "c1:7000,c2:7001" })?.redisTopology).toEqual({
    mode: "cluster",
    nodes: [
      { host: "c1", port: 7000 },
      { host: "c2", port: 7001 },
    ],
  });
  const bad = (extra: Record<string, string>) => {
    try {
      serviceSettings({ ...env, ...extra });
    } catch (e) {
      expect(isIddError(e, "CONFIG_INVALID")).toBe(true);
      return (e as Error).message;
    }
    throw new Error("no error");
  };
  expect(bad({ REDIS_CLUSTER_NODES: "c1:7000", REDIS_SENTINELS: "s1:26379", REDIS_SENTINEL_MASTER: "m" })).toMatch(/both set/);
  expect(bad({ REDIS_SENTINELS: "s1:26379" })).toMatch(/REDIS_SENTINEL_MASTER .* is not/);
  expect(bad({ REDIS_SENTINEL_MASTER: "m" })).toMatch(/REDIS_SENTINELS \(host:port,…\) is not/);
  expect(bad({ REDIS_SENTINEL_PASSWORD: "x" })).toMatch(/REDIS_SENTINEL_PASSWORD is set but REDIS_SENTINELS is not/);
  expect(bad({ REDIS_CLUSTER_NODES: "c1, c2:99999" })).toMatch(/"c1" is not host:port[\s\S]*"c2:99999" is not host:port/);
});
