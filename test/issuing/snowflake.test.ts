/**
 * Snowflake sequences through the dispenser, on real Redis and MongoDB: two workers (each with its
 * own issuer, so its own leased worker id) take one sequence's partition over from each other again
 * and again (each takeover fences the other, design I3); every id is unique and increasing across
 * both, their worker ids differ; a retry gets the same ids; no Redis counter is used.
 */
import { randomUUID } from "node:crypto";
import { afterAll, expect, inject, test } from "vitest";
import type { Dispenser } from "../../src/issuing/dispenser.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { decompose } from "../../src/sequences/snowflake-layout.js";
import { request as ask, DispenserRig, numbersOf as ids } from "../support/dispenser-rig.js";
import { startPrivateRedis } from "../support/private-redis.js";

// A Redis of this file's own, so that its node identity stays the same throughout.
const server = await startPrivateRedis();
const rig = new DispenserRig({ ...inject("services"), redisUrl: server.url }, "snow");
const store = rig.store;
/** A worker: a dispenser with a snowflake issuer of its own (so its own leased worker ids). */
const worker = (partition: number) => rig.dispenser({ partitions: [partition], snowflakes: true });
afterAll(async () => {
  await rig.close();
  await server.stop();
});

test("two workers take one snowflake sequence over from each other: all unique, increasing across both, different worker ids", async () => {
  const def = defineSequence(
    { name: `snow-${randomUUID()}`, kind: "snowflake", layout: "epoch=2026-01-01T00:00:00Z,workerBits=4,seqBits=8" },
    new Date(),
  );
  expect(def.snowflake).toMatchObject({ epochMs: Date.parse("2026-01-01T00:00:00Z"), timeBits: 41, workerBits: 4, seqBits: 8 });
  await store.createSequence(def);
  const [a, b] = [worker(0), worker(0)];
  const fromA: bigint[] = [];
  const fromB: bigint[] = [];
  const all: bigint[] = [];
  for (let i = 0; i < 40; i++) {
    const [w, out] = i % 2 === 0 ? [a, fromA] : [b, fromB];
    const got = ids(
      await (w as { d: Dispenser }).d.answer(
        0,
        Array.from({ length: 25 }, (_, k) => ask(def.name, 1 + (k % 40))),
        async () => {},
      ),
    );
    out.push(...got);
    all.push(...got);
  }
  expect(new Set(all).size).toBe(all.length);
  for (let i = 1; i < all.length; i++) expect(all[i] as bigint).toBeGreaterThan(all[i - 1] as bigint);
  const layout = def.snowflake as NonNullable<typeof def.snowflake>;
  const workerIds = [fromA, fromB].map((list) => new Set(list.map((id) => decompose(layout, id).worker)));
  expect(workerIds.map((s) => s.size)).toEqual([1, 1]);
  expect([...(workerIds[0] as Set<number>)][0]).not.toBe([...(workerIds[1] as Set<number>)][0]);
  const t = decompose(layout, fromA.at(-1) as bigint).time.getTime();
  expect(Math.abs(t - Date.now())).toBeLessThan(60_000); // the time field is now
  expect(a.allocator.stats.redisCalls + b.allocator.stats.redisCalls).toBe(0); // no counter
  const [first] = await a.d.answer(0, [ask(def.name, 3, "same")], async () => {});
  const [again] = await b.d.answer(0, [ask(def.name, 3, "same")], async () => {}); // b takes partition 0 over
  expect(again?.ranges).toEqual(first?.ranges);
});

test("failover: the partition's next owner issues above the last id its earlier owner answered, whatever the clocks", async () => {
  const def = defineSequence({ name: `snow-fo-${randomUUID()}`, kind: "snowflake", layout: "epoch=2026-01-01T00:00:00Z" }, new Date());
  await store.createSequence(def);
  const topic = `fo-${randomUUID()}`;
  let ahead = 40; // the first owner's clock runs 40 ms ahead: more than the 10 ms the next owner waits out
  const early = rig.dispenser({ topic, snowflakes: true, snowflakeClock: () => Date.now() + ahead });
  // The next owner's clock is far behind (not merely the 40 ms, which a loaded machine can spend
  // between the two answers, letting the real clock catch up).
  const late = rig.dispenser({ topic, snowflakes: true, snowflakeClock: () => Date.now() - 10_000 });
  const fromEarly = ids(await early.d.answer(0, [ask(def.name, 5), ask(def.name, 5)], async () => {}));
  // The late owner takes partition 0: its clock is behind the last answered id by more than it may
  // wait, so it refuses (and would have issued smaller ids without the high mark).
  const [refused] = await late.d.answer(0, [ask(def.name, 1)], async () => {});
  expect(refused?.error?.code).toBe("CLOCK_BACKWARDS");
  expect(refused?.error?.message).toMatch(/the last id the partition's earlier owner answered/);
  // A small difference is waited out; the ids then continue above the earlier owner's.
  await new Promise((r) => setTimeout(r, 60)); // past the 40 ms-ahead ids, for the next owner's clock too
  ahead = 3;
  const early2 = rig.dispenser({ topic, snowflakes: true, snowflakeClock: () => Date.now() + ahead });
  const more = ids(await early2.d.answer(0, [ask(def.name, 4)], async () => {})); // takes partition 0 back
  const late2 = rig.dispenser({ topic, snowflakes: true });
  const after = ids(await late2.d.answer(0, [ask(def.name, 4), ask(def.name, 4)], async () => {}));
  const all = [...fromEarly, ...more, ...after];
  expect(all).toHaveLength(22);
  for (let i = 1; i < all.length; i++) expect(all[i] as bigint).toBeGreaterThan(all[i - 1] as bigint);
});

test("snowflake definitions: every layout problem at once; the layout cannot change", () => {
  const now = new Date();
  expect(() =>
    defineSequence({ name: "s", kind: "snowflake", layout: "epoch=2999-01-01,timeBits=50,workerBits=10,seqBits=12,colour=red" }, now),
  ).toThrow(/layout: "colour=red" is not one of[\s\S]*layout: epoch .* is in the future[\s\S]*layout: .*at most 63/);
  const d = defineSequence({ name: "s", kind: "snowflake" }, now);
  expect(d.snowflake?.epochMs).toBe(now.getTime() - (now.getTime() % 86_400_000)); // today, UTC
  expect(() => defineSequence({ name: "s", layout: "seqBits=10" }, now, d)).toThrow(/layout cannot change/);
});
