/** Where the local stack keeps things, and which loopback ports it uses. */
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { PACKAGE_ROOT } from "../src/core/package-root.js";

/** The checkout (found from this file, both in stack/ and in dist/stack/). */
export const REPO_ROOT = PACKAGE_ROOT;

export type ServiceName = "redis" | "redis-auth" | "kafka" | "mongodb" | "mongodb-auth" | "registry";
export const SERVICE_NAMES: readonly ServiceName[] = ["redis", "redis-auth", "kafka", "mongodb", "mongodb-auth", "registry"];

/** Versions installed by the stack. Kafka 3.9 is the newest broker line kafkajs 2.2.4 is tested against here. */
export const VERSIONS = {
  kafka: "3.9.2",
  ferretdb: "1.24.2",
  apicurio: "3.0.9",
} as const;

export interface StackLayout {
  /** Data, logs, pid files and the env file of one stack (default `<repo>/.stack`). */
  dir: string;
  /** Installed services, shared by every checkout on the machine (default `~/.cache/idd`). */
  cacheDir: string;
  ports: Record<Exclude<ServiceName, "redis-auth" | "mongodb-auth">, number> & {
    redisAuth: number;
    mongodbAuth: number;
    registryTls: number;
    kafkaController: number;
    kafkaSasl: number;
  };
  readyTimeoutMs: number;
}

/**
 * Ports sit on a base far from every default (6379, 9092, 27017, 8081): base + 379, 92, 93, 17, 81;
 * the secured endpoints (stack/secrets.ts) on base + 380 (Redis with a password) and 94 (Kafka SASL).
 * `IDD_STACK_PORT_BASE` moves them all, e.g. to run a second stack beside the first.
 */
export function layoutFromEnv(env: NodeJS.ProcessEnv = process.env): StackLayout {
  const base = Number(env.IDD_STACK_PORT_BASE ?? 29000);
  if (!Number.isInteger(base) || base < 1024 || base > 65000) {
    throw new Error(`IDD_STACK_PORT_BASE must be an integer between 1024 and 65000, got "${env.IDD_STACK_PORT_BASE}"`);
  }
  const timeoutS = Number(env.IDD_STACK_READY_TIMEOUT_S ?? 180);
  if (!Number.isFinite(timeoutS) || timeoutS < 0) {
    throw new Error(`IDD_STACK_READY_TIMEOUT_S must be a number of seconds ≥ 0, got "${env.IDD_STACK_READY_TIMEOUT_S}"`);
  }
  const cacheHome = env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return {
    dir: resolve(env.IDD_STACK_DIR ?? join(REPO_ROOT, ".stack")),
    cacheDir: resolve(env.IDD_CACHE_DIR ?? join(cacheHome, "idd")),
    ports: {
      redis: base + 379,
      redisAuth: base + 380,
      kafka: base + 92,
      kafkaController: base + 93,
      kafkaSasl: base + 94,
      mongodb: base + 17,
      mongodbAuth: base + 18,
      registry: base + 81,
      registryTls: base + 82,
    },
    readyTimeoutMs: timeoutS * 1000,
  };
}

export const logFile = (l: StackLayout, name: ServiceName) => join(l.dir, "logs", `${name}.log`);
export const pidFile = (l: StackLayout, name: ServiceName) => join(l.dir, "run", `${name}.pid`);
export const dataDir = (l: StackLayout, name: ServiceName) => join(l.dir, "data", name);
export const envFile = (l: StackLayout) => join(l.dir, "env");
