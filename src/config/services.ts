/**
 * Where the four services are: from the environment, or else nowhere (the CLI then falls back to the
 * local stack, stack/local-services.ts, which reads the env file the stack writes or starts it).
 */
import { IddError } from "../core/errors.js";
import { type REDIS_TOPOLOGY_VARS, type RedisTopology, redisTopologyFromEnv } from "./redis-topology.js";
import { type SECURITY_VARS, type ServiceSecurity, securityFromEnv } from "./security.js";

export const SERVICE_VARS = ["KAFKA_BROKERS", "REDIS_URL", "MONGODB_URL", "SCHEMA_REGISTRY_URL"] as const;
export type ServiceVar = (typeof SERVICE_VARS)[number];

export interface ServiceSettings {
  kafkaBrokers: string[];
  redisUrl: string;
  /** Standalone (REDIS_URL's host), Sentinel or Cluster (src/config/redis-topology.ts). */
  redisTopology?: RedisTopology;
  mongodbUrl: string;
  schemaRegistryUrl: string;
  /** TLS and credentials beyond what the URLs carry (src/config/security.ts). */
  security: ServiceSecurity;
  /** Where the settings came from, for logs. */
  source: string;
}

/**
 * Reads the settings. All four variables set: they win. None set: undefined. Some but not all set: an
 * error naming the missing ones (half a configuration is a mistake, never silently completed from
 * the local stack).
 */
export function serviceSettings(env: NodeJS.ProcessEnv = process.env): ServiceSettings | undefined {
  const set = SERVICE_VARS.filter((k) => env[k]);
  if (set.length > 0 && set.length < SERVICE_VARS.length) {
    const missing = SERVICE_VARS.filter((k) => !env[k]);
    throw new IddError(
      "CONFIG_INVALID",
      `${set.join(", ")} set but ${missing.join(", ")} not: set all four, or none to use the local stack`,
    );
  }
  if (set.length === SERVICE_VARS.length) return fromVars(env as Record<ServiceVar, string>, "environment");
  return undefined;
}

/**
 * Checks the four variables and the security ones (src/config/security.ts) from the same source.
 * The URLs are kept as given, credentials included: print them only through redactUrl.
 */
export function fromVars(
  v: Record<ServiceVar, string> & Partial<Record<(typeof SECURITY_VARS)[number] | (typeof REDIS_TOPOLOGY_VARS)[number], string>>,
  source: string,
): ServiceSettings {
  const problems: string[] = [];
  const brokers = v.KAFKA_BROKERS.split(",").map((b) => b.trim());
  for (const b of brokers) if (!/^[^\s:]+:\d+$/.test(b)) problems.push(`KAFKA_BROKERS: "${b}" is not host:port`);
  const url = (k: ServiceVar, protocols: string[]) => {
    try {
      const u = new URL(v[k]);
      if (!protocols.includes(u.protocol)) problems.push(`${k}: protocol must be ${protocols.join(" or ")}, got ${u.protocol}`);
    } catch {
      // The text may hold a password: shown only when it has no user-info part.
      problems.push(`${k}: ${v[k].includes("@") ? "(value hidden: it has an @)" : `"${v[k]}"`} is not a URL`);
    }
  };
  url("REDIS_URL", ["redis:", "rediss:"]);
  url("MONGODB_URL", ["mongodb:", "mongodb+srv:"]);
  url("SCHEMA_REGISTRY_URL", ["http:", "https:"]);
  const security = securityFromEnv(v as Record<string, string | undefined>, v.SCHEMA_REGISTRY_URL, problems);
  if (security.redisCa && !v.REDIS_URL.startsWith("rediss:")) problems.push("REDIS_CA_FILE is set but REDIS_URL is not rediss:// (TLS)");
  const redisTopology = redisTopologyFromEnv(v as Record<string, string | undefined>, problems);
  if (problems.length > 0) throw new IddError("CONFIG_INVALID", `service settings from ${source}:\n${problems.join("\n")}`);
  return {
    kafkaBrokers: brokers,
    redisUrl: v.REDIS_URL,
    redisTopology,
    mongodbUrl: v.MONGODB_URL,
    schemaRegistryUrl: v.SCHEMA_REGISTRY_URL,
    security,
    source,
  };
}
