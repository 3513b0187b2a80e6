/**
 * The generator's rules on a stepped clock, with a lease held in memory (the Redis lease has its own
 * tests in test/issuing/sources/snowflake/). Property: over random schedules of clock steps (forward, a little back,
 * far back) and counts, ids strictly increase, never run ahead of the clock, and never reach the
 * issued-until bound or the floor.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { IddError, isIddError } from "../../../core/errors.js";
import type { Range } from "../../../core/range.js";
import { decompose, type SnowflakeLayout, validateLayout } from "../../../sequences/snowflake-layout.js";
import { SnowflakeGenerator } from "./generator.js";
import type { IssuingLease, LeaseGrant } from "./lease.js";

const T0 = Date.UTC(2026, 10, 21, 16, 30);

function small(seqBits = 3): SnowflakeLayout {
  return validateLayout({ epoch: Date.UTC(2026, 0, 1), workerBits: 2, seqBits }, { now: T0 }).layout as SnowflakeLayout;
}

/** A lease in memory: valid while `valid`, bound at clock + ttl on every renew. */
class MemoryLease implements IssuingLease {
  now = T0;
  valid = true;
  grant: { workerId: number; generation: number; floorMs: number | null; heldOff: boolean; untilMs: number; validUntil: number };
  readonly clock = () => this.now;
  released: (number | null | undefined)[] = [];
  constructor(workerId = 1, floorMs: number | null = null) {
    this.grant = { workerId, generation: 1, floorMs, heldOff: false, untilMs: T0 + 10_000, validUntil: Number.POSITIVE_INFINITY };
  }
  current(): LeaseGrant {
    if (!this.valid) throw new IddError("LEASE_LOST", "lapsed");
    return this.grant;
  }
  async renew() {
    this.grant.untilMs = this.now + 10_000;
  }
  async release(lastIssuedMs?: number | null) {
    this.released.push(lastIssuedMs);
    this.valid = false;
  }
}

const ids = (ranges: Range[]) => ranges.flatMap((r) => Array.from({ length: Number(r.last - r.first) + 1 }, (_, i) => r.first + BigInt(i)));

describe("snowflake generator (clock rules)", () => {
  test("ranges: one per unit, consecutive sequence numbers; a used-up unit waits for the next", async () => {
    const lease = new MemoryLease(2);
    const l = small();
    const g = new SnowflakeGenerator({
      layout: l,
      lease,
      sleep: async (ms) => {
        lease.now += ms;
      },
    });
    const a = g.take(5);
    expect(a).toHaveLength(1);
    expect(decompose(l, a[0]?.first as bigint)).toMatchObject({ time: new Date(T0), worker: 2, seq: 0 });
    expect(() => g.take(4)).toThrow(expect.objectContaining({ code: "SNOWFLAKE_WAIT" })); // 3 left in this ms: none issued
    expect(ids(g.take(3)).map((id) => decompose(l, id).seq)).toEqual([5, 6, 7]);
    expect(() => g.take(9)).toThrow(expect.objectContaining({ code: "INVALID_COUNT" }));
    const b = await g.takeAsync(20); // 8 per ms: three units, three ranges, the clock moved 2 ms
    expect(b.map((r) => decompose(l, r.first).time.getTime() - T0)).toEqual([1, 2, 3]);
    expect(ids(b)).toHaveLength(20);
    expect(lease.now).toBe(T0 + 3);
    expect(g.counts.waits).toBe(3);
  });

  test("maxAheadMs lets a used-up unit borrow the next units; never further", () => {
    const lease = new MemoryLease();
    const l = small();
    const g = new SnowflakeGenerator({ layout: l, lease, maxAheadMs: 2 });
    expect(g.maxTake).toBe(24);
    const r = g.take(20);
    expect(r.map((x) => decompose(l, x.first).time.getTime() - T0)).toEqual([0, 1, 2]);
    expect(() => g.take(5)).toThrow(expect.objectContaining({ code: "SNOWFLAKE_WAIT" }));
    expect(ids(g.take(4))).toHaveLength(4);
  });

  test("a clock 5 ms back is waited out; 10 s back is refused and counted; the generator goes on when it catches up", async () => {
    const lease = new MemoryLease();
    const l = small();
    const g = new SnowflakeGenerator({
      layout: l,
      lease,
      sleep: async (ms) => {
        lease.now += ms;
      },
    });
    const before = ids(g.take(3));
    lease.now -= 5;
    expect(() => g.take(1)).toThrow(expect.objectContaining({ code: "SNOWFLAKE_WAIT" }));
    const after = ids(await g.takeAsync(3));
    expect(after[0]).toBeGreaterThan(before[2] as bigint);
    expect(lease.now).toBe(T0); // waited the 5 ms out, then went on in the unit it had issued in
    lease.now -= 10_000;
    const err = (() => {
      try {
        g.take(1);
      } catch (e) {
        return e;
      }
    })();
    expect(isIddError(err, "CLOCK_BACKWARDS") && err.message).toMatch(/10000 ms behind the latest time this worker saw/);
    await expect(g.takeAsync(1)).rejects.toSatisfy((e) => isIddError(e, "CLOCK_BACKWARDS"));
    expect(g.counts.clockBackwards).toBe(2);
    lease.now += 10_000;
    expect(ids(g.take(1))[0]).toBeGreaterThan(after[2] as bigint);
  });

  test("a new grant starts past its floor: waits when the floor is a few ms ahead, refuses when far ahead", async () => {
    const l = small();
    const near = new MemoryLease(1, T0 + 4);
    const g = new SnowflakeGenerator({
      layout: l,
      lease: near,
      sleep: async (ms) => {
        near.now += ms;
      },
    });
    const [first] = ids(await g.takeAsync(1));
    expect(decompose(l, first as bigint).time.getTime()).toBe(T0 + 5);
    const far = new MemoryLease(1, T0 + 60_000);
    const h = new SnowflakeGenerator({ layout: l, lease: far });
    expect(() => h.take(1)).toThrow(/behind the previous holder's issued-until bound/);
  });

  test("the issued-until bound: a clock that jumped past it waits for a renewal", async () => {
    const lease = new MemoryLease();
    const g = new SnowflakeGenerator({ layout: small(), lease });
    lease.now = T0 + 20_000;
    expect(() => g.take(1)).toThrow(/issued-until bound is reached/);
    expect(ids(await g.takeAsync(2))).toHaveLength(2);
    expect(lease.grant.untilMs).toBe(T0 + 30_000);
  });

  test("a lapsed lease issues nothing; close releases with the latest time issued at", async () => {
    const lease = new MemoryLease();
    const g = new SnowflakeGenerator({ layout: small(), lease });
    g.take(1);
    lease.now += 7;
    g.take(1);
    await g.close();
    expect(lease.released).toEqual([T0 + 7]);
    expect(() => g.take(1)).toThrow(expect.objectContaining({ code: "LEASE_LOST" }));
    expect(g.counts.leaseLost).toBe(1);
  });

  test("the time field running out is SEQUENCE_EXHAUSTED", () => {
    const l = validateLayout({ epoch: T0 - 2 ** 40 + 2, timeBits: 40, workerBits: 0, seqBits: 1 }, { now: T0, minLifetimeMs: 0 }).layout;
    expect(l).toBeDefined();
    const lease = new MemoryLease(0);
    const g = new SnowflakeGenerator({ layout: l as SnowflakeLayout, lease, maxAheadMs: 5 });
    expect(ids(g.take(4))).toHaveLength(4); // units 2^40 − 2 and 2^40 − 1, the last two, 2 ids each
    expect(() => g.take(1)).toThrow(expect.objectContaining({ code: "SEQUENCE_EXHAUSTED" }));
  });

  test("property: strictly increasing, never ahead of the clock, past the floor, within the bound", async () => {
    const step = fc.record({
      dt: fc.oneof(fc.integer({ min: -12, max: 6 }), fc.constant(-20_000), fc.constant(15_000)),
      n: fc.integer({ min: 1, max: 40 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 60 }), fc.integer({ min: 0, max: 8 }), async (steps, floorAhead) => {
        const l = small();
        const lease = new MemoryLease(3, T0 + floorAhead);
        const g = new SnowflakeGenerator({
          layout: l,
          lease,
          sleep: async (ms) => {
            lease.now += ms;
          },
        });
        let last = -1n;
        for (const s of steps) {
          lease.now += s.dt;
          let got: Range[] = [];
          try {
            got = await g.takeAsync(s.n);
          } catch (e) {
            expect(isIddError(e, "CLOCK_BACKWARDS")).toBe(true);
            continue;
          }
          for (const id of ids(got)) {
            const t = decompose(l, id).time.getTime();
            expect(id).toBeGreaterThan(last);
            expect(t).toBeLessThanOrEqual(lease.now);
            expect(t).toBeGreaterThan(T0 + floorAhead);
            expect(t).toBeLessThanOrEqual(lease.grant.untilMs);
            last = id;
          }
          expect(ids(got)).toHaveLength(s.n);
        }
      }),
      { numRuns: 200 },
    );
  });
});
