/**
 * `npx tsx test/bench/snowflake.ts [--seconds 2]`: how many snowflake ids one generator issues per
 * second (default layout 41/10/12: at most 4,096 per ms), with `take(1)` in a loop, `take(100)`, and
 * `takeAsync(1)` (a promise per call). The lease is a real one from Redis (REDIS_URL, or the services
 * of `npm test`), but no id needs Redis: the lease is checked in memory on every call.
 */
import { randomUUID } from "node:crypto";
import { isIddError } from "../../src/core/errors.js";
import { SnowflakeGenerator } from "../../src/issuing/sources/snowflake/generator.js";
import { WorkerLease } from "../../src/issuing/sources/snowflake/lease.js";
import { snowflakeLeasePrefix, snowflakeUntilKey } from "../../src/redis/keys.js";
import { layoutWith, scriptedRedis } from "../issuing/sources/snowflake/support.js";
import { benchServices } from "../support/bench-services.js";
import { num } from "./args.js";

const say = (s: string) => process.stdout.write(`${s}\n`);
const seconds = num("seconds", 2);
const redisUrl = process.env.REDIS_URL ?? (await benchServices(say)).services.redisUrl;
const redis = scriptedRedis(redisUrl);
const sequence = `snow-bench-${randomUUID()}`;

async function run(label: string, sync: boolean, call: (g: SnowflakeGenerator) => number | Promise<number>): Promise<void> {
  const lease = new WorkerLease({ redis, sequence, workerBits: 10 });
  await lease.acquire();
  const g = new SnowflakeGenerator({ layout: layoutWith(10), lease });
  let ids = 0;
  let waits = 0;
  const one = sync
    ? () => {
        try {
          ids += call(g) as number;
        } catch (e) {
          if (!isIddError(e, "SNOWFLAKE_WAIT")) throw e;
          waits++; // the ms's 4,096 ids are used up: spin on into the next ms
        }
      }
    : async () => {
        ids += await call(g);
      };
  const measure = async (ms: number) => {
    ids = 0;
    waits = 0;
    const t0 = performance.now();
    while (performance.now() < t0 + ms) for (let i = 0; i < 1000; i++) sync ? one() : await one();
    return (performance.now() - t0) / 1000;
  };
  await measure(300); // warm up
  const s = await measure(seconds * 1000);
  const rate = ids / s;
  say(
    `${label.padEnd(15)} ${(rate / 1e6).toFixed(2).padStart(5)} M ids/s = ${(rate / 1e3).toFixed(0).padStart(4)} per ms; ${waits} SNOWFLAKE_WAIT, ${g.counts.waits} waits`,
  );
  await g.close();
}

const count = (ranges: { first: bigint; last: bigint }[]) => ranges.reduce((n, r) => n + Number(r.last - r.first) + 1, 0);
say(`snowflake generator, one worker, default layout, ${seconds} s each (node ${process.version})`);
await run("take(1)", true, (g) => count(g.take(1)));
await run("take(100)", true, (g) => count(g.take(100)));
await run("takeAsync(1)", false, async (g) => count(await g.takeAsync(1)));
await run("takeAsync(100)", false, async (g) => count(await g.takeAsync(100)));
await redis.del(snowflakeUntilKey(sequence), ...Array.from({ length: 1024 }, (_, i) => `${snowflakeLeasePrefix(sequence)}${i}`));
redis.disconnect();
