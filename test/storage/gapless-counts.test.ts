/**
 * The gapless counts from checkpoints (src/storage/gapless-counts.ts) give what a `$group` over
 * every number gives: across counters and periods, for counters numbered before checkpoints
 * existed, after confirms, voids and expiry, after a worker died between a settlement and its copy,
 * and with several workers issuing, settling and counting at once; every checkpoint written is true.
 */

import { pino } from "pino";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { isIddError } from "../../src/core/errors.js";
import { Instrumentation } from "../../src/core/events.js";
import { type GaplessDef, GaplessSource } from "../../src/issuing/sources/gapless/gapless-source.js";
import { GaplessSweep } from "../../src/issuing/sources/gapless/gapless-sweep.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { ownDatabase } from "../support/workers.js";

const { mongodbUrl } = ownDatabase(inject("services"), "gapless_counts");
const stores = Array.from({ length: 4 }, () => new Store(mongodbUrl));
const [store] = stores as [Store, ...Store[]];
const queries = new MongoQueries(mongodbUrl);
const at = new Date();
const never = defineSequence({ name: "cnt-never", gapless: true }, at) as GaplessDef;
const daily = defineSequence({ name: "cnt-daily", gapless: true, kind: "daily", start: 100 }, at) as GaplessDef;

beforeAll(async () => {
  await store.ensureIndexes();
  await store.createSequences([never, daily]);
});

afterAll(async () => {
  await queries.dropDatabase();
  await Promise.all(stores.map((s) => s.close()));
});

const counted = async (s = store) => (await s.gaplessCounts()).map((c) => `${c.sequence}/${c.state}=${c.numbers}`).sort();
const numbers = (first: bigint, last: bigint) => Array.from({ length: Number(last - first + 1n) }, (_, i) => first + BigInt(i));
const insert = (def: GaplessDef, period: string | null, first: bigint, last: bigint, expiresAt = new Date(at.getTime() + 3_600_000)) =>
  store.insertGapless(
    numbers(first, last).map((number) => ({ sequence: def.name, period, number, requestId: "", worker: "w", issuedAt: at, expiresAt })),
  );
const settle = (def: GaplessDef, period: string | null, first: bigint, last: bigint, to: "confirmed" | "voided") =>
  store.settleGapless({ sequence: def.name, period, numbers: numbers(first, last) }, to, to === "voided" ? "cancelled" : null, at, "w");

/** Every checkpoint says what the scan says of its counter's numbers up to `through`, all settled. */
async function checkpointsTrue(): Promise<number> {
  const cps = await queries.gaplessCheckpoints();
  for (const cp of cps.values()) {
    const scan = await queries.gaplessScanCounts(cp);
    const says = [`${cp.sequence}/confirmed=${cp.confirmed}`, `${cp.sequence}/voided=${cp.voided}`].filter((r) => !r.endsWith("=0"));
    expect(scan, JSON.stringify({ ...cp, through: `${cp.through}` })).toEqual(says);
  }
  return cps.size;
}

test("the counts are the scan's: counters from before checkpoints, two periods, confirms, voids, expiry and a missing copy", async () => {
  // Numbered without registration, as a worker of the previous version did: registered by the first count.
  await insert(never, null, 1n, 30n);
  await insert(daily, "20260101", 100n, 109n);
  await settle(never, null, 1n, 10n, "confirmed");
  await settle(never, null, 11n, 15n, "voided");
  await settle(daily, "20260101", 100n, 102n, "confirmed");
  expect(await counted()).toEqual(await queries.gaplessScanCounts());
  expect(await counted()).toEqual([
    "cnt-daily/confirmed=3",
    "cnt-daily/pending=7",
    "cnt-never/confirmed=10",
    "cnt-never/pending=15",
    "cnt-never/voided=5",
  ]);
  expect((await queries.gaplessCheckpoints()).get("cnt-never/-")?.through).toBe(15n);

  // A new period, registered before its first number as the source does; settled out of order.
  await store.registerGaplessCounter(daily.name, "20260102", daily.start);
  await insert(daily, "20260102", 100n, 119n, new Date(at.getTime() - 1000)); // past their expiry
  await settle(daily, "20260102", 105n, 110n, "voided");
  await settle(never, null, 20n, 30n, "confirmed"); // 16..19 still pending: the checkpoint stays at 15
  await settle(never, null, 16n, 16n, "voided");
  expect(await counted()).toEqual(await queries.gaplessScanCounts());
  expect((await queries.gaplessCheckpoints()).get("cnt-never/-")?.through).toBe(16n);

  // A worker killed between a settlement and its copy: the number's document says pending, as the scan counts it.
  await queries.collection<{ _id: string }>("gapless_settled").insertOne({
    _id: "cnt-never/-/17",
    sequence: never.name,
    period: null,
    number: 17n,
    state: "confirmed",
    reason: null,
    settledAt: at,
    settledBy: "killed",
  } as never);
  expect(await counted()).toEqual(await queries.gaplessScanCounts());
  expect((await queries.gaplessCheckpoints()).get("cnt-never/-")?.through).toBe(16n);

  // The sweep voids 20260102's expired numbers and counts them.
  const events = new Instrumentation();
  const seen: string[] = [];
  events.on("gapless.counts", (e) => seen.push(...e.counts.map((c) => `${c.sequence}/${c.state}=${c.numbers}`)));
  const sweep = new GaplessSweep({ store, worker: "sweeper", everyMs: 60_000, clock: Date.now, events, logger: pino({ level: "silent" }) });
  await sweep.run();
  expect(seen.sort()).toEqual(await queries.gaplessScanCounts());
  expect(seen).toContain("cnt-daily/voided=20");
  expect(await checkpointsTrue()).toBe(3);
  // A second repository (another worker's sweep, nothing in memory) counts the same from the checkpoints.
  expect(await counted(stores[1])).toEqual(await queries.gaplessScanCounts());
});

/**
 * Issues as a client does: a want refused UNAVAILABLE (a writer that lost the race for the next
 * numbers five times in a row, which a loaded CI machine saw twice) is asked again, alone. The
 * source answers such a want in its map, not by throwing.
 */
async function issueRetrying(source: GaplessSource, wants: Parameters<GaplessSource["issue"]>[0]): ReturnType<GaplessSource["issue"]> {
  const out: Awaited<ReturnType<GaplessSource["issue"]>> = new Map();
  let left = wants;
  for (let attempt = 1; left.length > 0; attempt++) {
    const got = await source.issue(left);
    left = left.filter((w) => {
      const taken = got.get(w);
      const again = attempt < 10 && isIddError(taken, "UNAVAILABLE");
      if (!again && taken !== undefined) out.set(w, taken);
      return again;
    });
  }
  return out;
}

test("several workers issuing, settling and counting at once: the counts end as the scan's, every checkpoint true", async () => {
  const period = "20260201";
  const workers = stores.slice(0, 3).map((s, i) => ({ store: s, source: new GaplessSource(s, `w${i}`) }));
  const want = (def: GaplessDef, p: string | null) => ({ def, period: p, count: 5, requestId: "", now: Date.now() });
  let counting = true;
  const counts: Promise<unknown>[] = [];
  // Two sweepers count over and over while the workers write (their checkpoints race).
  for (const s of stores.slice(2))
    counts.push(
      (async () => {
        while (counting) await s.gaplessCounts();
      })(),
    );
  await Promise.all(
    workers.map(async (w, i) => {
      for (let round = 0; round < 6; round++) {
        const got = await issueRetrying(w.source, [want(daily, period), want(never, null)]);
        for (const [x, taken] of got) {
          if (taken instanceof Error) throw taken;
          const all = taken.ranges.flatMap((r) => numbers(r.first, r.last));
          // Some confirmed, some voided, the rest left pending.
          const to = (round + i) % 3;
          if (to === 2) continue;
          await w.store.settleGapless(
            { sequence: x.def.name, period: x.period, numbers: all.slice(0, 4) },
            to === 0 ? "confirmed" : "voided",
            "r",
            new Date(),
            `w${i}`,
          );
        }
      }
    }),
  );
  counting = false;
  await Promise.all(counts);
  for (const s of stores) expect(await counted(s)).toEqual(await queries.gaplessScanCounts());
  expect(await checkpointsTrue()).toBe(4);
});
