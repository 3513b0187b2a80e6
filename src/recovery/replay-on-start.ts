/**
 * What a starting worker does about Redis state: nothing when Redis holds it. When Redis lost it
 * (no marker while MongoDB holds reservations), with `replayOnStart` one worker replays — the
 * others wait for it — and otherwise requests fail closed with REDIS_STATE_LOST until an operator
 * runs `idd replay`.
 */
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import type { RedisState } from "../allocation/redis-state.js";
import { isIddError } from "../core/errors.js";
import { createRedis } from "../redis/client.js";
import { REPLAY_LOCK_KEY } from "../redis/keys.js";
import type { Store } from "../storage/store.js";
import { replay } from "./replay.js";

export interface ReplayOnStart {
  /** The worker's Redis connection (for the lock). */
  redis: Redis;
  redisUrl: string;
  /** The CA for a rediss:// URL (REDIS_CA_FILE). */
  redisCa?: string;
  store: Store;
  state: RedisState;
  replayOnStart: boolean;
  workerId: string;
  logger: Logger;
}

/** How long one worker's replay may hold the lock before another may take over. */
const LOCK_MS = 300_000;

export async function ensureRedisState(o: ReplayOnStart): Promise<void> {
  try {
    await o.state.refresh();
    return;
  } catch (e) {
    if (!isIddError(e, "REDIS_STATE_LOST")) throw e;
    if (!o.replayOnStart) {
      o.logger.error({ code: e.code }, `${e.message}; until then requests are answered with REDIS_STATE_LOST`);
      return;
    }
  }
  const lock = REPLAY_LOCK_KEY;
  if ((await o.redis.set(lock, o.workerId, "PX", LOCK_MS, "NX")) === "OK") {
    o.logger.warn("Redis lost its state: replaying from MongoDB (IDD_REPLAY_ON_START)");
    // A client of its own: replay's batches may take longer than request-path commands may.
    const redis = createRedis(o.redisUrl, { ...(o.redisCa && { ca: o.redisCa }), options: { maxRetriesPerRequest: 2 } });
    try {
      const r = await replay(redis, o.store, { actor: `replay@${o.workerId}`, progress: (l) => o.logger.info(`replay: ${l}`) });
      o.logger.info({ counters: r.counters, failed: r.failed.length, ms: r.ms }, "replay done");
    } finally {
      await redis.del(lock);
      redis.disconnect();
    }
  } else {
    o.logger.info("another worker is replaying; waiting for it");
    while ((await o.redis.exists(lock)) === 1) await new Promise((r) => setTimeout(r, 500));
  }
  await o.state.refresh().catch((e: unknown) => o.logger.error({ err: (e as Error).message }, "Redis state still lost"));
}
