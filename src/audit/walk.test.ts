import { expect, test } from "vitest";
import type { LoggedGrant } from "../storage/grants.js";
import type { Release, ReleaseWhy } from "../storage/releases.js";
import type { LoggedReservation } from "../storage/reservations.js";
import { type Gap, NO_RELEASE, walk } from "./walk.js";

async function* each<T>(xs: T[]): AsyncGenerator<T> {
  yield* xs;
}
const t0 = new Date("2026-01-01T00:00:00Z");
const grant = (first: number, last: number, epoch = 1, id = `g${first}`): LoggedGrant => ({
  sequence: "s",
  period: null,
  first: BigInt(first),
  last: BigInt(last),
  epoch,
  worker: "w1",
  at: t0,
  id,
});
const run = (first: number, last: number) => ({ first: BigInt(first), last: BigInt(last) });
const reservation = (max: number, epoch: number, id: string, worker = "w1"): LoggedReservation => ({
  sequence: "s",
  period: null,
  max: BigInt(max),
  epoch,
  worker,
  at: t0,
  id,
});

async function gapsOf(o: {
  grants: LoggedGrant[];
  answered: { first: bigint; last: bigint }[];
  releases?: Release[];
  reservations?: LoggedReservation[];
  numbers?: boolean;
  window?: { from?: bigint; to?: bigint };
  issuedAbove?: boolean;
  start?: number;
}) {
  const gaps: Gap[] = [];
  const tally = await walk(
    {
      grants: each(o.grants),
      answered: each(o.answered),
      ...(o.releases && { releases: each(o.releases) }),
      reservations: o.reservations ?? [],
      numbersFrom: o.numbers === false ? null : t0,
      ...(o.start !== undefined && { start: BigInt(o.start) }),
      ...(o.window && { window: o.window }),
      ...(o.issuedAbove !== undefined && { issuedAbove: async () => o.issuedAbove as boolean }),
    },
    (g) => {
      gaps.push(g);
    },
  );
  // "<grant id>: no release …" shows as "<grant id>: -"
  return { tally, gaps: gaps.map((g) => `${g.first}..${g.last} ${g.reason} ${g.evidence?.replace(NO_RELEASE, "-") ?? "-"}`) };
}

test("a given-up tail, a dead worker's block, and a replay's headroom are explained; the series ends at the last answer", async () => {
  const { tally, gaps } = await gapsOf({
    grants: [grant(1, 10), grant(11, 20), grant(21, 30), grant(61, 70, 2)],
    answered: [run(1, 4), run(5, 7), run(11, 15), run(61, 62)],
    reservations: [reservation(40, 1, "r1"), reservation(60, 1, "r2"), reservation(60, 2, "replay", "replay@x")],
  });
  expect(gaps).toEqual(["8..10 given-up g1: -", "16..20 given-up g11: -", "21..30 given-up g21: -", "31..60 replay-headroom replay"]);
  expect(tally).toMatchObject({ first: 1n, last: 62n, answered: 14n, unproven: 0n });
  expect(tally.gaps.unexplained.numbers).toBe(0n);
});

const release = (first: number, last: number, why: ReleaseWhy): Release => ({
  sequence: "s",
  period: null,
  first: BigInt(first),
  last: BigInt(last),
  why,
  worker: "w1",
  at: t0,
});

test("a given-up stretch says why from the worker's releases, split where they start and end; none: its worker died", async () => {
  const { gaps } = await gapsOf({
    grants: [grant(1, 20), grant(21, 40)],
    answered: [run(1, 4), run(36, 40)],
    // 5..6 fenced with their batch, 7..12 released when the partition moved, 13..20 never released,
    // 21..30 left when the worker stopped, 31..35 not released; a release over answered numbers changes nothing.
    releases: [release(1, 2, "unrecorded"), release(5, 6, "fenced-batch"), release(7, 12, "partition-lost"), release(21, 30, "stopped")],
  });
  expect(gaps).toEqual([
    "5..6 given-up g1: fenced-batch",
    "7..12 given-up g1: partition-lost",
    "13..20 given-up g1: -",
    "21..30 given-up g21: stopped",
    "31..35 given-up g21: -",
  ]);
});

test("a number in no grant and no replay's headroom is unexplained, whatever surrounds it", async () => {
  const { tally, gaps } = await gapsOf({
    grants: [grant(1, 10), grant(21, 30)], // 11..20 granted, its grant deleted
    answered: [run(1, 10), run(25, 30)],
    reservations: [reservation(100, 1, "r1")],
  });
  expect(gaps).toEqual(["11..20 unexplained -", "21..24 given-up g21: -"]);
  expect(tally.gaps.unexplained).toEqual({ ranges: 1, numbers: 10n });
});

test("an abandoned claim is a gap of its own, number by number and block by block; at the series' end it is not walked", async () => {
  const abandoned = (first: number, last: number): LoggedGrant => ({
    ...grant(first, last, 1, `c${first}`),
    worker: "killed",
    abandoned: { gen: 7, by: "w2", at: t0 },
  });
  const o = { grants: [grant(1, 10), abandoned(11, 20), grant(21, 30)], reservations: [reservation(100, 1, "r1")] };
  const numbers = await gapsOf({ ...o, answered: [run(1, 10), run(21, 25)] });
  expect(numbers.gaps).toEqual(["11..20 abandoned-claim c11"]); // 26..30 lies after the last answer
  expect(numbers.tally.gaps["abandoned-claim"]).toEqual({ ranges: 1, numbers: 10n });
  expect(numbers.tally).toMatchObject({ first: 1n, last: 25n, answered: 15n });
  const blocks = await gapsOf({ ...o, answered: [], numbers: false });
  expect(blocks.gaps).toEqual(["11..20 abandoned-claim c11"]);
  expect(blocks.tally).toMatchObject({ first: 1n, last: 30n, unproven: 20n });
  // Nothing issued after it: past the series' last number.
  expect((await gapsOf({ grants: [grant(1, 10), abandoned(11, 20)], answered: [run(1, 10)] })).gaps).toEqual([]);
});

test("a replay whose next block starts above the old reservation does not explain the excess", async () => {
  const { gaps } = await gapsOf({
    grants: [grant(1, 10), grant(51, 60, 2)],
    answered: [run(1, 10), run(51, 51)],
    reservations: [reservation(40, 1, "r1"), reservation(60, 2, "replay")],
  });
  expect(gaps).toEqual(["11..50 unexplained -"]);
});

test("block level: grants are unproven, only holes outside them are gaps", async () => {
  const { tally, gaps } = await gapsOf({ grants: [grant(1, 10), grant(21, 30)], answered: [], numbers: false });
  expect(gaps).toEqual(["11..20 unexplained -"]);
  expect(tally).toMatchObject({ first: 1n, last: 30n, answered: 0n, unproven: 20n });
});

test("a window: only its numbers are walked; answers recorded twice count once", async () => {
  const { tally, gaps } = await gapsOf({
    grants: [grant(1, 100)],
    answered: [run(1, 20), run(10, 30), run(41, 100)],
    window: { from: 25n, to: 50n },
  });
  expect(gaps).toEqual(["31..40 given-up g1: -"]);
  expect(tally).toMatchObject({ first: 25n, last: 50n, answered: 16n });
});

test("a window that ends in a gap reports it only when numbers were issued above the window", async () => {
  const o = { grants: [grant(1, 100)], answered: [run(1, 30), run(41, 100)], window: { from: 5n, to: 35n } };
  expect((await gapsOf({ ...o, issuedAbove: true })).gaps).toEqual(["31..35 given-up g1: -"]);
  expect((await gapsOf({ ...o, issuedAbove: false })).gaps).toEqual([]);
});

test("from the counter's start: numbers below the first logged grant are a replay's headroom, or unexplained", async () => {
  // A killed worker's relaxed blocks were never logged; replay then restored the counter at 20,000.
  const replayed = await gapsOf({
    start: 1,
    grants: [grant(20001, 20100, 2)],
    answered: [],
    numbers: false,
    reservations: [reservation(20000, 1, "r1"), reservation(40000, 2, "replay", "replay@x")],
  });
  expect(replayed.gaps).toEqual(["1..20000 replay-headroom replay"]);
  expect(replayed.tally).toMatchObject({ first: 1n, last: 20100n, unproven: 100n });
  // The same hole without an epoch change: nothing in the log accounts for it.
  const lost = await gapsOf({ start: 1, grants: [grant(11, 20)], answered: [run(11, 12)], reservations: [reservation(100, 1, "r1")] });
  expect(lost.gaps).toEqual(["1..10 unexplained -"]); // 13..20 lies after the last answer: not in the series
});
