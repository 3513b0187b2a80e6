import { expect, test } from "vitest";
import { checkGaps } from "./gaps.js";

const r = (first: number, last: number, phase = 1) => ({ first: BigInt(first), last: BigInt(last), phase });
const phases = { names: ["warmup", "kill#1", "redis-restart#1", "scale#1"], kills: new Set([1]), redisLosses: new Set([2]) };
const audit = {
  grants: [r(1, 100), r(101, 200), r(201, 300)],
  reservationMaxima: [1000n, 2000n, 2000n],
};
const reserve = { lowMs: 15_000, aheadMs: 30_000 };

test("gaps inside granted blocks are explained whatever the phase", () => {
  const c = checkGaps("c", [r(1, 50, 0), r(120, 130, 3), r(250, 260, 3)], audit, phases, reserve);
  expect(c.violations).toEqual([]);
  expect(c.largestBlock).toBe(100n);
  expect(c.largestReservationStep).toBe(1000n);
  expect(c.unlogged).toEqual({ killed: 0n, replay: 0n });
});

test("ungranted numbers: up to two blocks in a kill phase, replay headroom ending at a reservation in a Redis-loss phase", () => {
  expect(checkGaps("c", [r(1, 10, 0), r(451, 460, 1)], audit, phases, reserve).unlogged.killed).toBe(150n); // 301..450
  expect(checkGaps("c", [r(1, 10, 0), r(1001, 1010, 2)], audit, phases, reserve).unlogged.replay).toBe(700n); // 301..1000
});

test("a raise leaves up to 1.5 steps of headroom (low at 15 s, ahead 30 s): a Redis loss right after it skips that much", () => {
  // Last grant ends at 300; the raise to 2000 came when 1000 - 300 = 700 (under 15 s of use) was left.
  const c = checkGaps("c", [r(1, 10, 0), r(2001, 2010, 2)], audit, phases, reserve);
  expect(c.headroomBound).toBe(1700n); // 1.5 × 1000 + 2 × 100
  expect(c.unlogged.replay).toBe(1700n); // 301..2000
  const slow = checkGaps("c", [r(1, 10, 0), r(2001, 2010, 2)], audit, phases, { lowMs: 5_000, aheadMs: 30_000 });
  expect(slow.headroomBound).toBe(1700n); // never below half a step: a raise also comes at two blocks of four
  const rare = checkGaps("c", [r(1, 10, 0), r(2001, 2010, 2)], audit, phases, { lowMs: 1_000, aheadMs: 1_000 });
  expect(rare.headroomBound).toBe(2200n);
});

test("anything else is a violation: too many, wrong phase, not ending at a reservation", () => {
  const cases = [
    [r(1, 10, 0), r(502, 510, 1)], // 301..501: 201 > 2 blocks
    [r(1, 10, 0), r(351, 360, 3)], // scale: nobody was killed
    [r(1, 10, 0), r(1002, 1010, 2)], // 301..1001 does not end at a reservation max
    [r(1, 10, 0), r(1201, 1210, 1)], // replay-like gap in a kill phase
  ];
  for (const issued of cases) expect(checkGaps("c", issued, audit, phases, reserve).violations).toHaveLength(1);
});

test("a request in flight across a kill: the gap it ends is the kill's, not the phase it was sent in", () => {
  const inFlight = { ...r(451, 460, 0), lastPhase: 1 }; // sent in warmup, answered in kill#1 by the victim's successor
  expect(checkGaps("c", [r(1, 10, 0), inFlight], audit, phases, reserve).unlogged.killed).toBe(150n);
  const late = { ...r(451, 460, 2), lastPhase: 3 }; // sent and answered after the kill: still a violation
  expect(checkGaps("c", [r(1, 10, 0), late], audit, phases, reserve).violations).toHaveLength(1);
});
