import { expect, test } from "vitest";
import { isIddError } from "../../../core/errors.js";
import type { RedisClient } from "../../../redis/client-type.js";
import type { Scripts } from "../../../redis/scripts.js";
import { defineSequence } from "../../../sequences/definition.js";
import type { AppendLog } from "../../../storage/append-log.js";
import type { Grant } from "../../../storage/grants.js";
import type { Store } from "../../../storage/store.js";
import { Counter, type CounterDeps } from "./counter.js";

/** A counter whose Redis resets every claim (unreachable), on the worker's wall clock as the allocator hands it. */
function unreachableCounter() {
  const claims = { n: 0 };
  const deps: CounterDeps = {
    redis: {} as RedisClient,
    scripts: {
      claim: async () => {
        claims.n++;
        throw new Error("connect ECONNREFUSED");
      },
    } as unknown as Scripts,
    store: { getReservation: async () => ({ epoch: 1, max: 10_000n }) } as unknown as Store,
    claimedUnder: { has: () => true, note: () => {} },
    grants: { full: false, buffered: 0, push: () => {} } as unknown as AppendLog<Grant>,
    release: () => {},
    worker: "w",
    config: {
      minBlock: 10,
      maxBlock: 1000,
      initialBlock: 50,
      targetBlockMs: 2000,
      reserveLowMs: 15_000,
      reserveAheadMs: 30_000,
      minReservation: 2000,
      prefetchAt: 0.5,
    },
    clock: () => Date.now(),
    stats: { redisCalls: 0 },
  };
  return { counter: new Counter(defineSequence({ name: "c" }, new Date()), null, 1, deps), claims };
}

test("after Redis did not answer, a claim is tried again a second later even when the wall clock was stepped back an hour", async () => {
  const realNow = Date.now;
  let step = 0;
  Date.now = () => realNow() + step;
  try {
    const { counter, claims } = unreachableCounter();
    const first = await counter.take(1).catch((e: unknown) => e);
    expect(isIddError(first, "UNAVAILABLE")).toBe(true);
    const tried = claims.n;
    expect(tried).toBeGreaterThan(0);
    step = -3_600_000; // NTP stepped the clock back an hour
    await new Promise((r) => setTimeout(r, 1100)); // past the second of failing fast, really
    await counter.take(1).catch(() => {});
    expect(claims.n).toBeGreaterThan(tried); // Redis asked again, not an hour of UNAVAILABLE without asking
  } finally {
    Date.now = realNow;
  }
});
