/**
 * `idd seq show`'s capacity forecast: what a sequence has left before it runs out and when, at its
 * recent rate (src/sequences/capacity.ts). Asked from the stores, no worker needed: the counter's
 * `cur` from Redis (or, with Redis unreachable, MongoDB's reservation in force, which is at or above
 * it: then "at least" that much is left), the rate from the `samples` every worker appends, over the
 * window a worker's own forecast uses (FORECAST_WINDOWS × IDD_SAMPLE_MS), and a snowflake
 * sequence's free worker ids from its leases. A gapless sequence needs no Redis: what is left is
 * its max value minus MongoDB's high mark, the highest number taken (docs/design.md §7), exact.
 */

import type { Config } from "../../config/config.js";
import { periodOf } from "../../core/period.js";
import { gaplessHighest } from "../../issuing/sources/gapless/gapless-source.js";
import { FORECAST_WINDOWS } from "../../issuing/sources/sample-windows.js";
import { freeWorkerIds } from "../../issuing/sources/snowflake/free-ids.js";
import { forecastWords } from "../../ops/forecast-text.js";
import { createRedis, redisConnected, redisTarget } from "../../redis/client.js";
import type { RedisClient } from "../../redis/client-type.js";
import { counterKey } from "../../redis/keys.js";
import { counterForecast, type Forecast, gaplessForecast, snowflakeForecasts } from "../../sequences/capacity.js";
import type { SequenceDef } from "../../sequences/sequence-def.js";
import type { Store } from "../../storage/store.js";

/** How long `seq show` waits for Redis before it forecasts from MongoDB's reservation instead. */
const REDIS_WAIT_MS = 3000;

/** The forecast lines of `def`: one per bound, `forecast period=… bound=… left=… rate=… runs-out=…`. */
export async function forecastLines(def: SequenceDef, store: Store, c: Config): Promise<string[]> {
  const now = Date.now();
  const period = periodOf(def, now);
  const line = (f: Forecast, note = "", runsOut?: string) => `  forecast period=${period ?? "-"} ${forecastWords(f, runsOut)}${note}`;
  const sampledRate = () => store.sampledRate(def.name, period, new Date(now - FORECAST_WINDOWS * c.sampleMs), new Date(now));
  if (def.gapless) {
    const [highest, rate] = await Promise.all([gaplessHighest(store, def, period), sampledRate()]);
    return [line(gaplessForecast({ def, period, highest, ratePerSecond: rate ?? 0, now }))];
  }
  const target = redisTarget(c.services);
  const redis = createRedis(target, { options: { maxRetriesPerRequest: 1, commandTimeout: REDIS_WAIT_MS } });
  try {
    const up = await redisConnected(redis, target, REDIS_WAIT_MS).then(
      () => true,
      () => false,
    );
    if (def.kind === "snowflake") {
      const free = up ? await freeWorkerIds(redis, def.name, def.snowflake.workerBits).catch(() => undefined) : undefined;
      return snowflakeForecasts(def, now, free).map((f) => line(f));
    }
    const rate = await sampledRate();
    const { cur, note } = await lastClaimed(def, period, up ? redis : undefined, store);
    const left = cur === null ? def.maxValue - def.start + 1n : def.maxValue - cur;
    // Left here is what Redis has not handed out yet: at 0, the workers may still hold the last
    // blocks in memory (their own forecasts, in `idd status`, count those), so not "RUN OUT".
    const allClaimed = left <= 0n ? "all claimed: what is left is in the workers' blocks (idd status)" : undefined;
    return [line(counterForecast({ def, period, left, ratePerSecond: rate ?? 0, now }), note, allClaimed)];
  } finally {
    redis.disconnect();
  }
}

/** The last number claimed of the counter (null: none yet), from Redis; from MongoDB's reservation when Redis is not there. */
async function lastClaimed(
  def: SequenceDef,
  period: string | null,
  redis: RedisClient | undefined,
  store: Store,
): Promise<{ cur: bigint | null; note: string }> {
  if (redis) {
    const cur = await redis.hget(counterKey(def.name, period), "cur").catch(() => undefined);
    if (cur !== undefined) return { cur: cur === null ? null : BigInt(cur), note: "" };
  }
  const r = await store.getReservation(def.name, period);
  return { cur: r ? r.max : null, note: " (Redis unreachable: at least this much left, from the reservation in force)" };
}
