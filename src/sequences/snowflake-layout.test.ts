import { describe, expect, test } from "vitest";
import { compose, decompose, fieldMax, runsOutAt, type SnowflakeLayout, validateLayout } from "./snowflake-layout.js";

const EPOCH_2026 = Date.UTC(2026, 0, 1);
const NOW = Date.UTC(2026, 10, 21, 16, 30);

function layout(input: Parameters<typeof validateLayout>[0]): SnowflakeLayout {
  const r = validateLayout(input, { now: NOW });
  expect(r.problems).toEqual([]);
  return r.layout as SnowflakeLayout;
}

describe("snowflake layout", () => {
  test("defaults: 41/10/12 bits of 1 ms; a 2026 epoch runs out in September 2095", () => {
    const l = layout({ epoch: "2026-01-01T00:00:00Z" });
    expect(l).toEqual({ epochMs: EPOCH_2026, unitMs: 1, timeBits: 41, workerBits: 10, seqBits: 12 });
    expect(Object.isFrozen(l)).toBe(true);
    expect(runsOutAt(l).toISOString()).toBe("2095-09-07T15:47:35.552Z");
    expect(runsOutAt(layout({ epoch: EPOCH_2026, unitMs: 10 })).getUTCFullYear()).toBe(2722);
  });

  test("compose and decompose round-trip at the edges; the largest id is 2^63 − 1", () => {
    const l = layout({ epoch: EPOCH_2026 });
    const max = fieldMax(l);
    expect(max).toEqual({ time: 2 ** 41 - 1, worker: 1023, seq: 4095 });
    const cases = [
      { time: 0, worker: 0, seq: 0 },
      { time: max.time, worker: max.worker, seq: max.seq },
      { time: max.time, worker: 0, seq: 0 },
      { time: 0, worker: max.worker, seq: 0 },
      { time: 0, worker: 0, seq: max.seq },
      { time: 123_456_789, worker: 512, seq: 7 },
    ];
    for (const c of cases) {
      const id = compose(l, c);
      expect(id).toBeGreaterThanOrEqual(0n);
      const d = decompose(l, id);
      expect({ time: d.units, worker: d.worker, seq: d.seq }).toEqual(c);
      expect(d.time.getTime()).toBe(EPOCH_2026 + c.time);
      expect(compose(l, { time: d.time, worker: d.worker, seq: d.seq })).toBe(id); // a Date works too
      expect(decompose(l, id.toString())).toEqual(d);
    }
    expect(compose(l, { time: max.time, worker: max.worker, seq: max.seq })).toBe(2n ** 63n - 1n);
    expect(compose(l, { time: 1, worker: 0, seq: 0 })).toBe(1n << 22n);
  });

  test("out-of-range fields and rounded numbers are refused, never wrapped", () => {
    const l = layout({ epoch: EPOCH_2026, workerBits: 2, seqBits: 3 });
    expect(() => compose(l, { time: 0, worker: 4, seq: 0 })).toThrow(/worker 4 is outside 0..3/);
    expect(() => compose(l, { time: 0, worker: 0, seq: 8 })).toThrow(RangeError);
    expect(() => compose(l, { time: -1, worker: 0, seq: 0 })).toThrow(RangeError);
    expect(() => compose(l, { time: new Date(EPOCH_2026 - 1), worker: 0, seq: 0 })).toThrow(RangeError);
    expect(() => decompose(layout({ epoch: EPOCH_2026 }), 2 ** 60)).toThrow(/rounded/);
    expect(() => decompose(l, 2n ** 50n)).toThrow(/outside the layout's 46 bits/);
    expect(() => decompose(l, "-1")).toThrow(RangeError);
    expect(decompose(l, 9)).toEqual({ time: new Date(EPOCH_2026), units: 0, worker: 1, seq: 1 });
  });

  test("every problem at once", () => {
    const r = validateLayout({ epoch: "soon", unitMs: 0, timeBits: 41.5, workerBits: 20, seqBits: -1, workerbits: 3 } as never, {
      now: NOW,
    });
    expect(r.layout).toBeUndefined();
    expect(r.problems).toEqual([
      'unknown layout setting "workerbits" (known: epoch, unitMs, timeBits, workerBits, seqBits)',
      "unitMs must be an integer from 1 to 1000, got 0",
      "timeBits must be an integer from 1 to 63, got 41.5",
      "workerBits must be an integer from 0 to 16, got 20",
      "seqBits must be an integer from 0 to 63, got -1",
      'epoch must be Unix ms (an integer >= 0) or an ISO 8601 date-time with a zone, got "soon"',
    ]);
    expect(validateLayout({}, { now: NOW }).problems).toEqual([expect.stringMatching(/^epoch is required/)]);
  });

  test("bits beyond 63, a future epoch, a short or spent time field, a field beyond JavaScript dates", () => {
    const problems = (input: Parameters<typeof validateLayout>[0]) => validateLayout(input, { now: NOW }).problems;
    expect(problems({ epoch: EPOCH_2026, timeBits: 42 })).toEqual([
      "timeBits + workerBits + seqBits is 64; at most 63, so that ids stay positive signed 64-bit integers",
    ]);
    expect(problems({ epoch: "2027-01-01T00:00:00Z" })).toEqual([
      "epoch 2027-01-01T00:00:00.000Z is in the future: no id could be issued before it",
    ]);
    expect(problems({ epoch: 0, timeBits: 40 })).toEqual([
      "the time field ran out at 2004-11-03T19:53:47.776Z: use a later epoch, more timeBits or a longer unitMs",
    ]);
    expect(problems({ epoch: EPOCH_2026, timeBits: 35 })).toEqual([
      expect.stringMatching(/^the time field runs out at 2027-02-0.*less than 365 days/),
    ]);
    expect(problems({ epoch: EPOCH_2026, timeBits: 53, workerBits: 0, seqBits: 0 })).toEqual([
      "timeBits 53 with unitMs 1 outlasts the year 275760 (the largest JavaScript date); use at most 52",
    ]);
    expect(problems({ epoch: EPOCH_2026, timeBits: 35, workerBits: 16, seqBits: 12, unitMs: 1000 })).toEqual([]);
  });
});
