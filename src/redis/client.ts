/**
 * Every Redis connection idd opens: from the URL (password or ACL user in its user-info, TLS with
 * rediss://) and an optional CA, with idd's scripts defined. Connection errors never reach ioredis's
 * default printer, whose output holds the failed command (after a refused login: the password).
 */
import { Redis, type RedisOptions } from "ioredis";
import { redactUrl } from "../config/secret.js";
import { oneLine, untrustedCertificate } from "../config/untrusted.js";
import { IddError } from "../core/errors.js";
import { defineScripts } from "./scripts.js";

export function createRedis(url: string, o: { ca?: string; options?: RedisOptions; onError?: (message: string) => void } = {}): Redis {
  const redis = new Redis(url, { ...o.options, ...(o.ca && { tls: { ca: o.ca } }) });
  redis.on("error", (e: Error) => o.onError?.(e.message)); // the message only: the error object holds the AUTH command
  return defineScripts(redis);
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
export function redisConnected(redis: Redis, url: string, ms: number): Promise<void> {
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
            ? new IddError("REDIS_AUTH_FAILED", `Redis at ${redactUrl(url)} refused the login: ${e.message}`)
            : new IddError(
                "REDIS_TLS_FAILED",
                `Redis at ${redactUrl(url)}: its certificate is not trusted (${oneLine(e)}); set REDIS_CA_FILE to the CA that signed it`,
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
