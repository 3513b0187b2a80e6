/**
 * Worker-id leases on the real Redis: two holders never hold one id at once, and a holder stopped
 * past its TTL issues nothing when it wakes (its local validity, from its own monotonic clock, has
 * run out) and cannot renew (its token is gone).
 */

import { expect, test } from "vitest";
import { isIddError } from "../../../../src/core/errors.js";
import { SnowflakeGenerator } from "../../../../src/issuing/sources/snowflake/generator.js";
import { type LeaseOptions, WorkerLease } from "../../../../src/issuing/sources/snowflake/lease.js";
import { snowflakeLeasePrefix, snowflakeUntilKey } from "../../../../src/redis/keys.js";
import { decompose } from "../../../../src/sequences/snowflake-layout.js";
import { freshSequence, idsOf, layoutWith, ownRedis, sleep } from "./support.js";

const { redis, leases } = await ownRedis();

function setup(workerBits: number) {
  const seq = freshSequence(redis);
  const lease = (o: Partial<LeaseOptions> = {}) => {
    const l = new WorkerLease({
      redis,
      sequence: seq.name,
      workerBits,
      ttlMs: 300,
      renewEveryMs: 100,
      marginMs: 50,
      autoRenew: false,
      ...o,
    });
    leases.push(l);
    return l;
  };
  return { name: seq.name, lease, layout: layoutWith(workerBits) };
}

test("holder A stopped past its TTL: B gets A's id; A wakes unable to issue or renew, and issued nothing after expiry", async () => {
  const { name, lease, layout } = setup(1);
  let monoA = 1_000; // A's own monotonic clock: it stands still while A is stopped, then jumps
  const A = lease({ monotonic: () => monoA, preferWorkerId: 0 });
  const occupier = lease({ autoRenew: true, preferWorkerId: 1 }); // holds the other id throughout
  const grantA = await A.acquire();
  expect(grantA.workerId).toBe(0);
  expect(grantA.validUntil).toBe(1_000 + 300 - 50); // from the reading taken before the command was sent
  expect((await occupier.acquire()).workerId).toBe(1);
  const genA = new SnowflakeGenerator({ layout, lease: A });
  const fromA = idsOf(genA.take(10));
  const boundA = Number(await redis.hget(snowflakeUntilKey(name), "0"));

  // B cannot have the id while A holds it.
  const B = lease({ autoRenew: true, preferWorkerId: 0 });
  await expect(B.acquire()).rejects.toSatisfy((e) => isIddError(e, "WORKER_IDS_EXHAUSTED"));

  // A is stopped: it renews nothing; real time passes its TTL, and its monotonic clock moves with it.
  await sleep(400);
  monoA += 400;
  const grantB = await B.acquire();
  expect(grantB.workerId).toBe(0);
  expect(grantB.floorMs).toBe(boundA); // A's issued-until bound: B issues only later times
  const genB = new SnowflakeGenerator({ layout, lease: B });
  const fromB = idsOf(await genB.takeAsync(10));

  // A resumes: its generator refuses before touching Redis, its renewal finds B's token.
  expect(() => genA.take(1)).toThrow(expect.objectContaining({ code: "LEASE_LOST" }));
  await expect(A.renew()).rejects.toSatisfy((e) => isIddError(e, "LEASE_LOST"));
  expect(() => A.current()).toThrow(/lost: worker id 0 was taken over or expired in Redis/);
  expect(genA.counts.leaseLost).toBe(1);
  await B.renew(); // B's lease is untouched by A's attempt
  expect(await redis.pttl(`${snowflakeLeasePrefix(name)}0`)).toBeGreaterThan(200);

  expect(new Set([...fromA, ...fromB]).size).toBe(20);
  for (const id of fromA) expect(decompose(layout, id).time.getTime()).toBeLessThanOrEqual(boundA);
  for (const id of fromB) expect(decompose(layout, id).time.getTime()).toBeGreaterThan(boundA);
  expect(Math.min(...fromB.map((id) => decompose(layout, id).time.getTime()))).toBeGreaterThan(
    Math.max(...fromA.map((id) => decompose(layout, id).time.getTime())),
  );
});

test("validity counts from before the command: a reply that took longer than TTL − margin gives no usable lease", async () => {
  const { lease } = setup(2);
  let reads = 0;
  const slow = lease({ ttlMs: 10_000, marginMs: 1_000, renewEveryMs: 3_000, monotonic: () => (reads++ === 0 ? 0 : 9_500) });
  const grant = await slow.acquire(); // the reading before sending is 0; every later one is 9,500
  expect(grant.validUntil).toBe(9_000);
  expect(() => slow.current()).toThrow(/lapsed 500 ms ago/);
});

test("a lapse Redis has not noticed yet: a renewal proves the id is still held and restores validity (same holding)", async () => {
  const { lease, layout } = setup(2);
  let mono = 0;
  const A = lease({ monotonic: () => mono });
  await A.acquire();
  const g = new SnowflakeGenerator({ layout, lease: A });
  const first = idsOf(g.take(3));
  mono = 260; // past validUntil (250) by A's clock; Redis still has the key (real time barely moved)
  expect(() => g.take(1)).toThrow(expect.objectContaining({ code: "LEASE_LOST" }));
  await A.renew();
  expect(A.current().generation).toBe(1);
  expect(A.current().validUntil).toBe(260 + 250);
  const next = idsOf(await g.takeAsync(3));
  expect(next[0]).toBeGreaterThan(first[2] as bigint);
}, 10_000);

test("re-acquiring after a lease expired in Redis takes a new holding; ids stay increasing", async () => {
  const { lease, layout } = setup(0); // one worker id only
  let mono = 0;
  const A = lease({ monotonic: () => mono });
  await A.acquire();
  const g = new SnowflakeGenerator({ layout, lease: A });
  const before = idsOf(await g.takeAsync(5));
  await sleep(350);
  mono = 350;
  expect(() => g.take(1)).toThrow(expect.objectContaining({ code: "LEASE_LOST" }));
  const again = await A.acquire(); // the renewal finds no key: lost; then a fresh acquire of the free id
  expect(again.generation).toBe(2);
  const after = idsOf(await g.takeAsync(5));
  expect(after[0]).toBeGreaterThan(before[4] as bigint);
});

test("release frees the id at once and lowers its bound to the last time issued; acquire prefers ids whose bound is behind the clock", async () => {
  const { name, lease, layout } = setup(1);
  let now = Date.UTC(2026, 10, 21, 12);
  const clock = () => now;
  const A = lease({ clock, preferWorkerId: 0 });
  await A.acquire();
  const g = new SnowflakeGenerator({ layout, lease: A });
  g.take(1);
  now += 7;
  g.take(1);
  expect(await redis.hget(snowflakeUntilKey(name), "0")).toBe(String(now - 7 + 300));
  await g.close();
  expect(await redis.exists(`${snowflakeLeasePrefix(name)}0`)).toBe(0);
  expect(await redis.hget(snowflakeUntilKey(name), "0")).toBe(String(now));
  expect(() => g.take(1)).toThrow(/released/);

  // Id 1's bound is far ahead of this clock (its last holder's clock was): an acquire starting at 1 takes 0.
  await redis.hset(snowflakeUntilKey(name), "1", String(now + 60_000));
  const B = lease({ clock, preferWorkerId: 1 });
  const grant = await B.acquire();
  expect(grant).toMatchObject({ workerId: 0, floorMs: now });
  now += 1;
  const h = new SnowflakeGenerator({ layout, lease: B });
  expect(idsOf(h.take(1))).toHaveLength(1); // one ms after A's last: no wait
  expect(h.counts.waits).toBe(0);
});

test("lease settings are checked", () => {
  const { lease } = setup(0);
  expect(() => lease({ ttlMs: 1_000, renewEveryMs: 900, marginMs: 200 })).toThrow(
    /renewEveryMs \(900\) must be less than ttlMs − marginMs \(800\)/,
  );
});
