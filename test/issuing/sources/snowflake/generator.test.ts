/**
 * Snowflake generators on leases from the real Redis: clock steps back (waited out or refused),
 * restarts on the same worker id with the clock behind the previous holder's issued-until bound, and
 * uniqueness across generators on different worker ids.
 */

import { expect, test } from "vitest";
import { isIddError } from "../../../../src/core/errors.js";
import { Instrumentation } from "../../../../src/core/events.js";
import { type GeneratorOptions, SnowflakeGenerator } from "../../../../src/issuing/sources/snowflake/generator.js";
import { SnowflakeIssuer } from "../../../../src/issuing/sources/snowflake/issuer.js";
import { type LeaseOptions, WorkerLease } from "../../../../src/issuing/sources/snowflake/lease.js";
import { createMetrics } from "../../../../src/ops/metrics.js";
import { defineSequence } from "../../../../src/sequences/definition.js";
import { decompose } from "../../../../src/sequences/snowflake-layout.js";
import { EPOCH, expectStrictlyIncreasing, freshSequence, idsOf, layoutWith, ownRedis, sleep } from "./support.js";

const { redis, leases } = await ownRedis();

/** A sequence whose leases and generators share one stepped wall clock. */
function stepped(workerBits: number, ttlMs = 10_000) {
  const seq = freshSequence(redis);
  const layout = layoutWith(workerBits);
  const clock = { now: Date.UTC(2026, 10, 21, 12) };
  const lease = (o: Partial<LeaseOptions> = {}) => {
    const l = new WorkerLease({
      redis,
      sequence: seq.name,
      workerBits,
      ttlMs,
      renewEveryMs: Math.floor(ttlMs / 3),
      marginMs: Math.floor(ttlMs / 10),
      autoRenew: false,
      clock: () => clock.now,
      ...o,
    });
    leases.push(l);
    return l;
  };
  const generator = (l: WorkerLease, o: Partial<GeneratorOptions> = {}) =>
    new SnowflakeGenerator({
      layout,
      lease: l,
      sleep: async (ms) => {
        clock.now += ms;
      },
      ...o,
    });
  return { layout, clock, lease, generator };
}

const timeOf = (layout: ReturnType<typeof layoutWith>, id: bigint) => decompose(layout, id).time.getTime();

test("clock stepped back 5 ms: waited out, no duplicate, strictly increasing; 10 s back: CLOCK_BACKWARDS, counted", async () => {
  const { layout, clock, lease, generator } = stepped(4);
  const l = lease();
  await l.acquire();
  const g = generator(l);
  const ids: bigint[] = [];
  for (let i = 0; i < 20; i++) {
    ids.push(...idsOf(g.take(50)));
    clock.now += 1;
  }
  const t = clock.now;
  clock.now -= 5;
  expect(() => g.take(1)).toThrow(expect.objectContaining({ code: "SNOWFLAKE_WAIT" }));
  ids.push(...idsOf(await g.takeAsync(10)));
  expect(clock.now).toBe(t - 1); // waited 4 ms: on into the ms it had last issued in
  expectStrictlyIncreasing(ids);
  expect(new Set(ids).size).toBe(ids.length);
  expect(timeOf(layout, ids.at(-1) as bigint)).toBeLessThanOrEqual(clock.now);

  clock.now -= 10_000;
  expect(() => g.take(1)).toThrow(expect.objectContaining({ code: "CLOCK_BACKWARDS" }));
  await expect(g.takeAsync(5)).rejects.toSatisfy((e) => isIddError(e, "CLOCK_BACKWARDS"));
  expect(g.counts.clockBackwards).toBe(2);
  clock.now += 10_000;
  const later = idsOf(g.take(5));
  expect(later[0]).toBeGreaterThan(ids.at(-1) as bigint);
});

test("restart on the same worker id (the first holder crashed) with the clock behind its issued-until bound: waits or refuses, no duplicate", async () => {
  const { layout, clock, lease, generator } = stepped(0, 300); // one worker id: every holder gets id 0
  const t0 = clock.now;
  const first = lease();
  await first.acquire();
  const g1 = generator(first);
  const before: bigint[] = [];
  for (let i = 0; i <= 20; i++) {
    before.push(...idsOf(g1.take(100)));
    clock.now += 1;
  }
  clock.now -= 1;
  await first.renew(); // the bound is now t0 + 20 + 300
  const bound = t0 + 20 + 300;
  first.abandon(); // a crash: no release; the key expires after its TTL
  await sleep(350);

  // The restarted worker's clock is 295 ms behind the bound: refused (default maxBackwardWaitMs 10).
  clock.now = t0 + 25;
  const second = lease();
  expect((await second.acquire()).floorMs).toBe(bound);
  const g2 = generator(second);
  await expect(g2.takeAsync(1)).rejects.toSatisfy(
    (e) => isIddError(e, "CLOCK_BACKWARDS") && /previous holder's issued-until bound/.test(e.message),
  );
  expect(g2.counts.clockBackwards).toBe(1);

  // The same with maxBackwardWaitMs 400: it waits until past the bound, then issues.
  const g3 = generator(second, { maxBackwardWaitMs: 400 });
  const waited = idsOf(await g3.takeAsync(100));
  expect(clock.now).toBe(bound + 1);
  // That holder crashes too; its bound is its acquire's (t0 + 25 + 300). The next one's clock is 5 ms
  // behind it: with the default it waits.
  const secondBound = t0 + 25 + 300;
  second.abandon();
  await sleep(350);
  clock.now = secondBound - 5;
  const third = lease();
  expect((await third.acquire()).floorMs).toBe(secondBound);
  const g4 = generator(third);
  const near = idsOf(await g4.takeAsync(100));
  expect(clock.now).toBe(secondBound + 1);

  for (const id of waited) expect(timeOf(layout, id)).toBeGreaterThan(bound);
  const all = [...before, ...waited, ...near];
  expect(new Set(all).size).toBe(all.length);
  expectStrictlyIncreasing(all);
});

test("a clean restart: release lowers the bound to the last time issued, so the next holder issues at once", async () => {
  const { clock, lease, generator } = stepped(0);
  const first = lease();
  await first.acquire();
  const g1 = generator(first);
  const before = idsOf(g1.take(10));
  const last = clock.now;
  await g1.close();
  clock.now = last + 1;
  const second = lease();
  expect((await second.acquire()).floorMs).toBe(last);
  const g2 = generator(second);
  const after = idsOf(g2.take(10)); // synchronous: no wait needed
  expect(g2.counts.waits).toBe(0);
  expect(after[0]).toBeGreaterThan(before.at(-1) as bigint);
});

test("uniqueness: generators on different worker ids, real clocks, many ms: all distinct, each strictly increasing", async () => {
  const seq = freshSequence(redis);
  const layout = layoutWith(10, 6); // 64 ids per ms: the sequence runs out often
  const gens = await Promise.all(
    Array.from({ length: 4 }, async () => {
      const l = new WorkerLease({ redis, sequence: seq.name, workerBits: 10 });
      leases.push(l);
      await l.acquire();
      return { g: new SnowflakeGenerator({ layout, lease: l }), ids: [] as bigint[] };
    }),
  );
  expect(new Set(gens.map((x) => decompose(layout, idsOf(x.g.take(1))[0] as bigint).worker)).size).toBe(4);
  // Until the ids span over 100 ms (a loaded machine gets there later; bounded at 20 s).
  const giveUp = Date.now() + 20_000;
  const ms = new Set<number>();
  for (let round = 0; ms.size <= 100 && Date.now() < giveUp; round++) {
    await Promise.all(
      gens.map(async (x) => {
        const ids = idsOf(await x.g.takeAsync(1 + ((round * 37) % 150)));
        x.ids.push(...ids);
        for (const id of ids) ms.add(timeOf(layout, id));
      }),
    );
  }
  const all = gens.flatMap((x) => x.ids);
  for (const x of gens) expectStrictlyIncreasing(x.ids);
  expect(new Set(all).size).toBe(all.length);
  expect(ms.size).toBeGreaterThan(100); // spread over many ms
  expect(gens.reduce((n, x) => n + x.g.counts.waits, 0)).toBeGreaterThan(0); // and the sequence did run out
});

test("the issuer: CLOCK_BACKWARDS is counted in /metrics by sequence, the leased worker id is shown, and the wait bound is a setting", async () => {
  const seq = freshSequence(redis);
  const def = defineSequence({ name: seq.name, kind: "snowflake", layout: { epoch: EPOCH } }, new Date());
  const events = new Instrumentation();
  const metrics = createMetrics({ events, counters: () => [], roundTrips: () => ({ redis: 0, mongodb: 0 }), maxSequences: 10 });
  const line = async (name: string) => (await metrics.metrics()).split("\n").find((l) => l.startsWith(`${name}{sequence="${seq.name}"}`));
  let offset = 0;
  const clock = () => Date.now() + offset;
  const strict = new SnowflakeIssuer({ redis, events, clock });
  const before = idsOf(await strict.take(def, 3));
  expect(Number((await line("idd_snowflake_worker_id"))?.split(" ")[1])).toBe(decompose(layoutWith(10), before[0] as bigint).worker);
  // 60 ms behind the latest time issued (more than the default 10 ms), counted from that time, not
  // from now: the metrics read above took more than 50 ms once on a loaded machine.
  const behind = (id: bigint) => decompose(layoutWith(10), id).time.getTime() - 60 - Date.now();
  offset = behind(before.at(-1) as bigint);
  await expect(strict.take(def, 1)).rejects.toSatisfy((e) => isIddError(e, "CLOCK_BACKWARDS"));
  expect(await line("idd_snowflake_clock_backwards_total")).toBe(`idd_snowflake_clock_backwards_total{sequence="${seq.name}"} 1`);
  await strict.close();
  expect(await line("idd_snowflake_worker_id")).toBe(`idd_snowflake_worker_id{sequence="${seq.name}"} -1`);
  // With IDD_SNOWFLAKE_MAX_BACKWARD_WAIT_MS 200 the same step is waited out.
  offset = 0;
  const lenient = new SnowflakeIssuer({ redis, events, clock, generator: { maxBackwardWaitMs: 200 } });
  const after = idsOf(await lenient.take(def, 1));
  offset = behind(after.at(-1) as bigint);
  const waited = idsOf(await lenient.take(def, 2));
  expectStrictlyIncreasing([...before, ...after, ...waited]);
  expect(await line("idd_snowflake_clock_backwards_total")).toMatch(/ 1$/);
  await lenient.close();
});
