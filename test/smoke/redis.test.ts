import { createHash, randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, expect, inject, test } from "vitest";
import { counterKey } from "../../src/allocation/keys.js";
import { claimBlock, defineScripts, initCounter, raiseMax, readScripts } from "../../src/allocation/scripts.js";
import { isIddError } from "../../src/errors.js";

const redis = defineScripts(new Redis(inject("services").redisUrl));
const key = counterKey(`smoke-${randomUUID()}`, "20261121");

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
  expect(scripts.map((s) => s.name).sort()).toEqual(["claimBlock", "initCounter", "raiseMax"]);
  await initCounter(redis, key, 999n, 1005n, "e1");
  const shas = scripts.map((s) => createHash("sha1").update(s.lua).digest("hex"));
  const loaded = (await redis.script("EXISTS", ...shas)) as number[];
  expect(loaded[scripts.findIndex((s) => s.name === "initCounter")]).toBe(1);
  const before = await evalshaCalls();
  expect(await raiseMax(redis, key, 1010n, "e1")).toBe(1010n);
  expect(await raiseMax(redis, key, 1010n, "e1")).toBe(1010n);
  expect(await evalshaCalls()).toBeGreaterThanOrEqual(before + 1);
});

test("claimBlock hands out consecutive blocks within max, then refuses until max is raised", async () => {
  expect(await claimBlock(redis, key, 4, "e1")).toEqual({ first: 1000n, last: 1003n, max: 1010n });
  expect(await claimBlock(redis, key, 4, "e1")).toEqual({ first: 1004n, last: 1007n, max: 1010n });
  expect(await claimBlock(redis, key, 4, "e1")).toEqual({ first: 1008n, last: 1010n, max: 1010n }); // cut at max
  await expect(claimBlock(redis, key, 4, "e1")).rejects.toSatisfy((e) => isIddError(e, "REDIS_EXHAUSTED"));
  expect(await raiseMax(redis, key, 2000n, "e1")).toBe(2000n);
  expect(await raiseMax(redis, key, 1500n, "e1")).toBe(2000n); // never lowered
  expect(await claimBlock(redis, key, 5, "e1")).toEqual({ first: 1011n, last: 1015n, max: 2000n });
  expect(await redis.hgetall(key)).toEqual({ cur: "1015", max: "2000", epoch: "e1" });
});

test("claims fail closed on a missing counter and on a stale epoch; initCounter never overwrites", async () => {
  await expect(claimBlock(redis, key, 1, "e0")).rejects.toSatisfy((e) => isIddError(e, "REDIS_FENCED"));
  await expect(claimBlock(redis, `${key}-gone`, 1, "e1")).rejects.toSatisfy((e) => isIddError(e, "REDIS_STATE_MISSING"));
  await expect(raiseMax(redis, `${key}-gone`, 5n, "e1")).rejects.toSatisfy((e) => isIddError(e, "REDIS_STATE_MISSING"));
  await expect(initCounter(redis, key, 0n, 10n, "e2")).rejects.toSatisfy((e) => isIddError(e, "REDIS_COUNTER_EXISTS"));
  expect(await redis.hget(key, "cur")).toBe("1015");
});
