/**
 * Every Redis connection idd opens, with idd's scripts defined: a standalone Redis from the URL, a
 * primary found through Sentinel, or a Redis Cluster (src/config/redis-topology.ts). The URL's
 * password or ACL user and TLS (rediss://, with an optional CA) apply to the data nodes in every
 * topology. Connection errors never reach ioredis's default printer, whose output holds the failed
 * command (after a refused login: the password).
 *
 * Failover. Under Sentinel, ioredis asks the sentinels for the primary at every (re)connect and
 * listens for their switch-master announcements (failoverDetector), and connects again should it
 * give up by itself (sentinel-redis.ts); a command a demoted primary
 * refuses with READONLY (nothing written: the script stopped at its first write) reconnects and is
 * sent again, to the primary the sentinels name. Under Cluster, ioredis follows MOVED and refreshes
 * its slot map. Every script touches the keys of one hash tag only (src/redis/keys.ts).
 */
import { Cluster, Redis, type RedisOptions } from "ioredis";
import type { RedisTopology } from "../config/redis-topology.js";
import { redactUrl } from "../config/secret.js";
import type { ServiceSettings } from "../config/services.js";
import { oneLine, untrustedCertificate } from "../config/untrusted.js";
import { IddError } from "../core/errors.js";
import type { RedisClient } from "./client-type.js";
import { defineScripts } from "./scripts.js";
import { SentinelRedis } from "./sentinel-redis.js";

/** Where Redis is: the URL (credentials, TLS; the host for a standalone Redis), its CA and the topology. */
export interface RedisTarget {
  url: string;
  ca?: string;
  topology?: RedisTopology;
}

/** A demoted primary refuses writes: reconnect (to the primary Sentinel names now) and send the command again. */
export function reconnectOnReadonly(e: Error): 2 | false {
  return /\bREADONLY\b/.test(e.message) ? 2 : false;
}

/** The user, password and TLS of REDIS_URL, as ioredis options for Sentinel's and Cluster's data nodes. */
function nodeOptions(url: string, ca: string | undefined): RedisOptions {
  const u = new URL(url);
  const tls = u.protocol === "rediss:" ? { tls: ca ? { ca } : {} } : {};
  return {
    ...(u.username && { username: decodeURIComponent(u.username) }),
    ...(u.password && { password: decodeURIComponent(u.password) }),
    ...tls,
  };
}

export function createRedis(
  target: RedisTarget | string,
  o: { ca?: string; options?: RedisOptions; onError?: (message: string) => void } = {},
): RedisClient {
  const t: RedisTarget = typeof target === "string" ? { url: target, ...(o.ca && { ca: o.ca }) } : target;
  const topology = t.topology ?? { mode: "standalone" };
  let redis: RedisClient;
  if (topology.mode === "cluster") {
    const { enableOfflineQueue, ...rest } = o.options ?? {};
    redis = new Cluster(topology.nodes, {
      redisOptions: { ...rest, ...nodeOptions(t.url, t.ca), reconnectOnError: reconnectOnReadonly },
      scaleReads: "master",
      ...(enableOfflineQueue !== undefined && { enableOfflineQueue }),
    });
  } else if (topology.mode === "sentinel") {
    redis = new SentinelRedis({
      ...o.options,
      ...nodeOptions(t.url, t.ca),
      sentinels: topology.sentinels,
      name: topology.master,
      ...(topology.sentinelPassword && { sentinelPassword: topology.sentinelPassword.reveal() }),
      failoverDetector: true,
      reconnectOnError: reconnectOnReadonly,
      enableAutoPipelining: true,
    });
  } else {
    redis = new Redis(t.url, {
      ...o.options,
      ...(t.ca && { tls: { ca: t.ca } }),
      reconnectOnError: reconnectOnReadonly,
      enableAutoPipelining: true,
    });
  }
  redis.on("error", (e: Error) => o.onError?.(e.message)); // the message only: the error object holds the AUTH command
  return defineScripts(redis);
}

/** Where the configured Redis is: URL, CA and topology. */
export function redisTarget(s: ServiceSettings): RedisTarget {
  return { url: s.redisUrl, ...(s.security.redisCa && { ca: s.security.redisCa }), ...(s.redisTopology && { topology: s.redisTopology }) };
}

/** How a target prints in messages: the URL without its password, and the topology. */
export function describeTarget(t: RedisTarget | string): string {
  if (typeof t === "string") return redactUrl(t);
  const top = t.topology;
  if (!top || top.mode === "standalone") return redactUrl(t.url);
  if (top.mode === "sentinel") return `Sentinel ${top.master} at ${top.sentinels.map((s) => `${s.host}:${s.port}`).join(",")}`;
  return `Redis Cluster at ${top.nodes.map((s) => `${s.host}:${s.port}`).join(",")}`;
}

/** WRONGPASS: wrong user or password; NOAUTH: Redis wants a password and got none. */
const AUTH_ERROR = /^(WRONGPASS|NOAUTH)\b/;

export function isRedisAuthError(e: unknown): boolean {
  return AUTH_ERROR.test((e as Error)?.message ?? "");
}

/**
 * Waits until `redis` is ready, up to `ms` (a Redis that is down then fails the first commands as
 * usual); a refused login fails at once with REDIS_AUTH_FAILED and an untrusted certificate with
 * REDIS_TLS_FAILED, since retrying cannot help either.
 */
export function redisConnected(redis: RedisClient, target: RedisTarget | string, ms: number): Promise<void> {
  const where = describeTarget(target);
  if (redis.status === "ready") return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = (e?: Error) => {
      clearTimeout(timer);
      redis.off("ready", ok);
      redis.off("error", failed);
      if (e) {
        redis.disconnect();
        reject(
          isRedisAuthError(e)
            ? new IddError("REDIS_AUTH_FAILED", `Redis at ${where} refused the login: ${e.message}`)
            : new IddError(
                "REDIS_TLS_FAILED",
                `Redis at ${where}: its certificate is not trusted (${oneLine(e)}); set REDIS_CA_FILE to the CA that signed it`,
              ),
        );
      } else resolve();
    };
    const ok = () => done();
    const failed = (e: Error) => {
      if (isRedisAuthError(e) || untrustedCertificate(e)) done(e);
    };
    const timer = setTimeout(ok, ms);
    redis.once("ready", ok);
    redis.on("error", failed);
  });
}
