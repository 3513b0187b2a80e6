/**
 * Which Redis topology idd uses, from the environment beside REDIS_URL (docs/production.md:
 * Redis topologies): a standalone Redis (REDIS_URL alone), a primary found through Sentinel
 * (REDIS_SENTINELS and REDIS_SENTINEL_MASTER), or Redis Cluster (REDIS_CLUSTER_NODES). REDIS_URL's
 * credentials and TLS (rediss://) apply to the data nodes in every topology; its host is used only
 * by a standalone Redis. The variables are rows of the settings table (settings-services.ts).
 */
import { type Secret, secretFromEnv } from "./secret.js";

export interface HostPort {
  host: string;
  port: number;
}

export type RedisTopology =
  | { mode: "standalone" }
  | { mode: "sentinel"; sentinels: HostPort[]; master: string; sentinelPassword?: Secret }
  | { mode: "cluster"; nodes: HostPort[] };

export const REDIS_TOPOLOGY_VARS = [
  "REDIS_SENTINELS",
  "REDIS_SENTINEL_MASTER",
  "REDIS_SENTINEL_PASSWORD",
  "REDIS_SENTINEL_PASSWORD_FILE",
  "REDIS_CLUSTER_NODES",
] as const;

function hostPorts(name: string, text: string, problems: string[]): HostPort[] {
  const out: HostPort[] = [];
  for (const part of text.split(",").map((p) => p.trim())) {
    const m = /^([^\s:,]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(part);
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65_535) problems.push(`${name}: "${part}" is not host:port`);
    else out.push({ host: (m[1] as string).replace(/^\[|\]$/g, ""), port });
  }
  return out;
}

/** The topology the variables describe; problems (CONFIG_INVALID) when they contradict each other. */
export function redisTopologyFromEnv(env: Record<string, string | undefined>, problems: string[]): RedisTopology {
  const sentinels = env.REDIS_SENTINELS?.trim();
  const master = env.REDIS_SENTINEL_MASTER?.trim();
  const nodes = env.REDIS_CLUSTER_NODES?.trim();
  const sentinelPassword = secretFromEnv(env, "REDIS_SENTINEL_PASSWORD", problems);
  const before = problems.length;
  if (nodes && (sentinels || master))
    problems.push(
      "REDIS_CLUSTER_NODES and REDIS_SENTINELS/REDIS_SENTINEL_MASTER are both set: Redis is either a cluster or under Sentinel; set one",
    );
  if (sentinels && !master) problems.push("REDIS_SENTINELS is set but REDIS_SENTINEL_MASTER (the name the sentinels monitor) is not");
  if (master && !sentinels) problems.push("REDIS_SENTINEL_MASTER is set but REDIS_SENTINELS (host:port,…) is not");
  if (sentinelPassword && !sentinels) problems.push("REDIS_SENTINEL_PASSWORD is set but REDIS_SENTINELS is not");
  if (problems.length > before) return { mode: "standalone" };
  if (nodes) return { mode: "cluster", nodes: hostPorts("REDIS_CLUSTER_NODES", nodes, problems) };
  if (sentinels && master)
    return {
      mode: "sentinel",
      sentinels: hostPorts("REDIS_SENTINELS", sentinels, problems),
      master,
      ...(sentinelPassword && { sentinelPassword }),
    };
  return { mode: "standalone" };
}
