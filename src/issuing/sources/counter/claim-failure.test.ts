/**
 * A claim that fails on an uncoded error says which store failed (no services: the counter's
 * stores are fakes that throw what the MongoDB driver and ioredis throw).
 */
import { MongoError } from "mongodb";
import { expect, test } from "vitest";
import { type IddError, isIddError } from "../../../core/errors.js";
import type { RedisClient } from "../../../redis/client-type.js";
import type { Scripts } from "../../../redis/scripts.js";
import { defineSequence } from "../../../sequences/definition.js";
import { AppendLog } from "../../../storage/append-log.js";
import type { Grant } from "../../../storage/grants.js";
import type { Store } from "../../../storage/store.js";
import { claimFailure, failedStore } from "./claim-failure.js";
import { type AllocationConfig, Counter } from "./counter.js";

const config: AllocationConfig = {
  minBlock: 10,
  maxBlock: 1000,
  initialBlock: 10,
  targetBlockMs: 1000,
  reserveLowMs: 1000,
  reserveAheadMs: 10_000,
  minReservation: 100,
  prefetchAt: 0.5,
};

/** A counter whose MongoDB reads throw `mongo` (when given) and whose Redis scripts throw `redis`. */
function counter(fail: { mongo?: Error; redis?: Error }): Counter {
  const store = {
    getReservation: async () => {
      if (fail.mongo) throw fail.mongo;
      return { sequence: "inv", period: null, max: 1000n, epoch: 1 };
    },
  } as unknown as Store;
  const scripts = {
    claim: async () => {
      throw fail.redis ?? new Error("unexpected claim");
    },
  } as unknown as Scripts;
  const grants = new AppendLog<Grant>(async () => {}, { flushMs: 60_000, maxBatch: 500, maxBuffered: 1000, onError: () => {} });
  return new Counter(defineSequence({ name: "inv" }, new Date()), null, 1, {
    redis: {} as RedisClient,
    scripts,
    store,
    claimedUnder: { has: () => true, note: () => {} },
    grants,
    release: () => {},
    worker: "w1",
    config,
    clock: Date.now,
    stats: { redisCalls: 0 },
  });
}

const failure = (c: Counter) =>
  c.take(1).then(
    () => undefined,
    (e: unknown) => e as IddError,
  );

test("a MongoDB driver error during a claim is labelled MongoDB, also on the fast retry", async () => {
  const c = counter({ mongo: new MongoError("Timed out while checking out a connection from connection pool") });
  const first = await failure(c);
  expect(isIddError(first, "UNAVAILABLE")).toBe(true);
  expect(first?.message).toBe("{seq:inv}:all: MongoDB unreachable (Timed out while checking out a connection from connection pool)");
  const again = await failure(c); // within a second: failed fast, still naming MongoDB
  expect(again?.message).toMatch(/^\{seq:inv\}:all: MongoDB unreachable \(Timed out .*\); no numbers left in memory$/);
});

test("a Redis error during a claim is labelled Redis", async () => {
  const e = await failure(counter({ redis: new Error("Connection is closed.") }));
  expect(e?.message).toBe("{seq:inv}:all: Redis unreachable (Connection is closed.)");
});

test("the store is told by the error's origin", () => {
  expect(failedStore(new MongoError("x"))).toBe("MongoDB");
  expect(failedStore(new Error("ECONNRESET"))).toBe("Redis");
  expect(claimFailure("k", new MongoError("x")).code).toBe("UNAVAILABLE");
});
