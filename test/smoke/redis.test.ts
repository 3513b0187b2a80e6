import { createHash, randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import {
  claimBlock,
  defineScripts,
  fenceCounter,
  initCounter,
  raiseMax,
  readScripts,
  restoreCounter,
} from "../../src/allocation/scripts.js";
import { isIddError } from "../../src/errors.js";
import { counterKey, MARKER_KEY } from "../../src/redis/keys.js";

const redis = defineScripts(new Redis(inject("services").redisUrl));
const key = counterKey(`smoke-${randomUUID()}`, "20261121");
// The shared Redis's marker (created if this is the first use); changing it would disturb other tests.
let M = "";
beforeAll(async () => {
  await redis.set(MARKER_KEY, `new:${randomUUID()}`, "NX");
  M = (await redis.get(MARKER_KEY)) as string;
});

afterAll(async () => {
  await redis.del(key);
  redis.disconnect();
});

async function evalshaCalls(): Promise<number> {
  const info = await redis.info("commandstats");
  return Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

test("every lua/ script is registered; after the first call (EVAL on NOSCRIPT) calls go through EVALSHA", async () => {
  const scripts = readScripts();
  expect(scripts.map((s) => s.name).sort()).toEqual([
    "acquireLease",
    "claimBlock",
    "fenceCounter",
    "initCounter",
    "raiseMax",
    "recordAnswers",
    "releaseLease",
    "renewLease",
    "restoreCounter",
    "takeOwner",
  ]);
  await initCounter(redis, key, 999n, 1005n, "e1", M);
  const shas = scripts.map((s) => createHash("sha1").update(s.lua).digest("hex"));
  const loaded = (await redis.script("EXISTS", ...shas)) as number[];
  expect(loaded[scripts.findIndex((s) => s.name === "initCounter")]).toBe(1);
  const before = await evalshaCalls();
  expect(await raiseMax(redis, key, 1010n, "e1", M)).toBe(1010n);
  expect(await raiseMax(redis, key, 1010n, "e1", M)).toBe(1010n);
  expect(await evalshaCalls()).toBeGreaterThanOrEqual(before + 1);
});

test("claimBlock hands out consecutive blocks within max, then refuses until max is raised", async () => {
  expect(await claimBlock(redis, key, 4, "e1", M)).toEqual({ first: 1000n, last: 1003n, max: 1010n });
  expect(await claimBlock(redis, key, 4, "e1", M)).toEqual({ first: 1004n, last: 1007n, max: 1010n });
  expect(await claimBlock(redis, key, 4, "e1", M)).toEqual({ first: 1008n, last: 1010n, max: 1010n }); // cut at max
  await expect(claimBlock(redis, key, 4, "e1", M)).rejects.toSatisfy((e) => isIddError(e, "REDIS_EXHAUSTED"));
  expect(await raiseMax(redis, key, 2000n, "e1", M)).toBe(2000n);
  expect(await raiseMax(redis, key, 1500n, "e1", M)).toBe(2000n); // never lowered
  // A retry with the id of a claim whose answer was lost gets that claim's block, once; a new id, a new block.
  expect(await claimBlock(redis, key, 5, "e1", M, "c1")).toEqual({ first: 1011n, last: 1015n, max: 2000n });
  expect(await claimBlock(redis, key, 9, "e1", M, "c1")).toEqual({ first: 1011n, last: 1015n, max: 2000n });
  expect(await redis.hmget(key, "cur", "max", "epoch")).toEqual(["1015", "2000", "e1"]);
  expect(await claimBlock(redis, key, 5, "e1", M, "c2")).toEqual({ first: 1016n, last: 1020n, max: 2000n });
});

test("claims fail closed on a missing counter and on a stale epoch; initCounter never overwrites", async () => {
  await expect(claimBlock(redis, key, 1, "e0", M)).rejects.toSatisfy((e) => isIddError(e, "REDIS_FENCED"));
  await expect(claimBlock(redis, `${key}-gone`, 1, "e1", M)).rejects.toSatisfy((e) => isIddError(e, "REDIS_STATE_MISSING"));
  await expect(raiseMax(redis, `${key}-gone`, 5n, "e1", M)).rejects.toSatisfy((e) => isIddError(e, "REDIS_STATE_MISSING"));
  await expect(initCounter(redis, key, 0n, 10n, "e2", M)).rejects.toSatisfy((e) => isIddError(e, "REDIS_COUNTER_EXISTS"));
  expect(await redis.hget(key, "cur")).toBe("1020");
});

test("every script that hands out or creates numbers refuses without the current marker (Redis lost its state)", async () => {
  const stale = `${M}-before-replay`;
  await expect(claimBlock(redis, key, 1, "e1", stale)).rejects.toSatisfy((e) => isIddError(e, "REDIS_STATE_LOST"));
  await expect(raiseMax(redis, key, 5000n, "e1", stale)).rejects.toSatisfy((e) => isIddError(e, "REDIS_STATE_LOST"));
  const fresh = counterKey(`smoke-${randomUUID()}`, null);
  await expect(initCounter(redis, fresh, 0n, 10n, "1", stale)).rejects.toSatisfy((e) => isIddError(e, "REDIS_STATE_LOST"));
  expect(await redis.exists(fresh)).toBe(0);
  expect(await redis.hget(key, "cur")).toBe("1020");
});

test("fence and restore: claims fail while fenced; restore never lowers cur or max and lifts the fence", async () => {
  const k = counterKey(`smoke-${randomUUID()}`, null);
  await initCounter(redis, k, 99n, 500n, "1", M);
  await claimBlock(redis, k, 50, "1", M);
  expect(await fenceCounter(redis, k, "fence-a")).toEqual({ cur: 149n, max: 500n, epoch: "1" });
  await expect(claimBlock(redis, k, 1, "1", M)).rejects.toSatisfy((e) => isIddError(e, "REDIS_FENCED"));
  await expect(restoreCounter(redis, k, "fence-b", 1000n, 2000n, 2)).rejects.toSatisfy((e) => isIddError(e, "REDIS_FENCED"));
  expect(await restoreCounter(redis, k, "fence-a", 120n, 300n, 2)).toEqual({ cur: 149n, max: 500n }); // never lowered
  expect(await claimBlock(redis, k, 1, "2", M)).toEqual({ first: 150n, last: 150n, max: 500n });
  await fenceCounter(redis, k, "fence-c");
  expect(await restoreCounter(redis, k, "fence-c", 700n, 900n, 3)).toEqual({ cur: 700n, max: 900n });
  expect(await redis.hmget(k, "cur", "max", "epoch")).toEqual(["700", "900", "3"]);
  const gone = counterKey(`smoke-${randomUUID()}`, null);
  expect(await fenceCounter(redis, gone, "fence-d")).toEqual({ cur: null, max: null, epoch: null });
  await expect(claimBlock(redis, gone, 1, "1", M)).rejects.toSatisfy((e) => isIddError(e, "REDIS_STATE_MISSING"));
  expect(await restoreCounter(redis, gone, "fence-d", 10n, 20n, 4)).toEqual({ cur: 10n, max: 20n });
  await redis.del(k, gone);
});
