/**
 * Snowflake leases through Redis data loss, on a Redis of the test's own: the sequence's state has
 * no node identity after the flush, so a new holder of an id starts after every time the id's
 * vanished holder could still issue at (one TTL from Redis's time), and the two never share an id
 * and a time. No operator step: the hold-off is the whole recovery.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { isIddError } from "../../../../src/core/errors.js";
import { SnowflakeGenerator } from "../../../../src/issuing/sources/snowflake/generator.js";
import { WorkerLease } from "../../../../src/issuing/sources/snowflake/lease.js";
import { type PrivateRedis, startPrivateRedis } from "../../../support/private-redis.js";
import { idsOf, knownSnowflakeState, layoutWith, scriptedRedis, sleep } from "./support.js";

let server: PrivateRedis;
beforeAll(async () => {
  server = await startPrivateRedis();
});
afterAll(async () => server?.stop());

test("after FLUSHALL: the new holder of the id starts after the old one's last possible time", async () => {
  const redis = scriptedRedis(server.url);
  await knownSnowflakeState(redis, "lost"); // a sequence in use: A's lease is not held off
  const layout = layoutWith(0); // one worker id: both holders must use id 0
  const settings = { ttlMs: 800, renewEveryMs: 200, marginMs: 100, autoRenew: false };
  const a = new WorkerLease({ redis, sequence: "lost", workerBits: 0, ...settings });
  await a.acquire();
  const genA = new SnowflakeGenerator({ layout, lease: a });
  const fromA: bigint[] = [];
  const beforeFlush = Date.now();
  await redis.flushall(); // Redis loses everything; A does not know yet and stays locally valid
  const b = new WorkerLease({ redis, sequence: "lost", workerBits: 0, ...settings });
  const grant = await b.acquire();
  expect(grant.workerId).toBe(0);
  expect(grant.heldOff).toBe(true);
  expect(grant.floorMs as number).toBeGreaterThanOrEqual(beforeFlush + settings.ttlMs);
  const genB = new SnowflakeGenerator({ layout, lease: b });
  const fromB: bigint[] = [];
  // Both issue as fast as they can: A until its local validity ends, B as soon as its floor allows.
  const until = Date.now() + 2 * settings.ttlMs;
  let refusedB = 0;
  let renewedAt = Date.now();
  while (Date.now() < until) {
    if (Date.now() - renewedAt >= settings.renewEveryMs) {
      await b.renew(); // B renews as a running worker does (A cannot: its key went with the flush)
      renewedAt = Date.now();
    }
    try {
      fromA.push(...idsOf(genA.take(5)));
    } catch {
      // A's lease lapsed locally (or its unit is full): it issues no more
    }
    try {
      fromB.push(...idsOf(genB.take(5)));
    } catch (e) {
      if (isIddError(e, "SNOWFLAKE_HOLD_OFF")) refusedB++;
      else if (!isIddError(e, "SNOWFLAKE_WAIT")) throw e;
    }
    await sleep(1);
  }
  expect(fromA.length).toBeGreaterThan(0); // A did issue after the flush
  expect(fromB.length).toBeGreaterThan(0);
  expect(refusedB).toBeGreaterThan(0); // B was held off at first, with a code saying so (not CLOCK_BACKWARDS)
  const all = [...fromA, ...fromB];
  expect(new Set(all).size).toBe(all.length);
  expect(fromB[0] as bigint).toBeGreaterThan(fromA.at(-1) as bigint);
  redis.disconnect();
}, 30_000);
