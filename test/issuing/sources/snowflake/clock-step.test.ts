/**
 * A worker's wall clock stepped an hour ahead and back while it holds a worker id (issue #28's clock
 * nemesis: NTP stepping a bad clock, or a host set wrong and corrected). Snowflake ids take their
 * time from Redis's clock, carried forward by the worker's monotonic clock, so a step of the wall
 * clock moves none of them: before, the worker issued ids an hour ahead, recorded as the sequence's
 * high mark, and every later issuer — the same worker once its clock was right again, or the next
 * owner of the partition — answered CLOCK_BACKWARDS for that hour.
 */
import { afterEach, expect, test, vi } from "vitest";
import { SnowflakeGenerator } from "../../../../src/issuing/sources/snowflake/generator.js";
import { WorkerLease } from "../../../../src/issuing/sources/snowflake/lease.js";
import { decompose } from "../../../../src/sequences/snowflake-layout.js";
import { freshSequence, idsOf, layoutWith, ownRedis } from "./support.js";

const { redis, leases } = await ownRedis();
const HOUR = 3_600_000;

afterEach(() => {
  vi.restoreAllMocks();
});

/** Redis's clock, Unix ms. */
async function redisNow(): Promise<number> {
  const [s, us] = (await redis.time()) as [number, number];
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

test("a wall clock stepped 1 h ahead, then back: every id keeps Redis's time, and the next owner issues at once", async () => {
  const { name } = freshSequence(redis);
  const layout = layoutWith(4);
  const realNow = Date.now.bind(Date);
  let step = 0;
  // The host's wall clock, stepped by the test (the fault); everything else is real.
  vi.spyOn(Date, "now").mockImplementation(() => realNow() + step);
  const lease = new WorkerLease({ redis, sequence: name, workerBits: 4, autoRenew: false });
  leases.push(lease);
  await lease.acquire();
  const gen = new SnowflakeGenerator({ layout, lease });

  const ids = idsOf(await gen.takeAsync(5));
  step = HOUR; // an hour ahead: the bound stored at acquire is passed, so the worker renews
  ids.push(...idsOf(await gen.takeAsync(5)));
  await lease.renew();
  ids.push(...idsOf(await gen.takeAsync(5)));
  step = 0; // and back
  ids.push(...idsOf(await gen.takeAsync(5)));

  const now = await redisNow();
  for (const id of ids) expect(Math.abs(decompose(layout, id).time.getTime() - now), `id ${id}`).toBeLessThan(5000);
  for (let i = 1; i < ids.length; i++) expect((ids[i] as bigint) > (ids[i - 1] as bigint)).toBe(true);

  // The partition's next owner, on another worker id, starts above the last id answered: at once.
  const next = new WorkerLease({ redis, sequence: name, workerBits: 4, autoRenew: false });
  leases.push(next);
  await next.acquire();
  const nextGen = new SnowflakeGenerator({ layout, lease: next });
  nextGen.raiseFloor(ids.at(-1) as bigint);
  const t0 = performance.now();
  const more = idsOf(await nextGen.takeAsync(5));
  expect(performance.now() - t0).toBeLessThan(1000);
  expect((more[0] as bigint) > (ids.at(-1) as bigint)).toBe(true);
});
