import { createHash, randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { isIddError } from "../../src/core/errors.js";
import { answerKey, counterKey, MARKER_KEY, ownerKey, routeKey, snowflakeHighKey } from "../../src/redis/keys.js";
import { readScripts, Scripts } from "../../src/redis/scripts.js";
import { scriptClient } from "../support/redis.js";

const redis = scriptClient(inject("services").redisUrl);
const scripts = new Scripts(redis);
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
  const files = readScripts();
  expect(files.map((s) => s.name).sort()).toEqual([
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
  await scripts.initCounter({ counter: key, cur: 999n, max: 1005n, epoch: "e1", marker: M });
  const shas = files.map((s) => createHash("sha1").update(s.lua).digest("hex"));
  const loaded = (await redis.script("EXISTS", ...shas)) as number[];
  expect(loaded[files.findIndex((s) => s.name === "initCounter")]).toBe(1);
  const before = await evalshaCalls();
  expect(await scripts.raiseMax({ counter: key, max: 1010n, epoch: "e1", marker: M })).toBe(1010n);
  expect(await scripts.raiseMax({ counter: key, max: 1010n, epoch: "e1", marker: M })).toBe(1010n);
  expect(await evalshaCalls()).toBeGreaterThanOrEqual(before + 1);
});

test("claimBlock hands out consecutive blocks within max, then refuses until max is raised", async () => {
  expect(await scripts.claimBlock({ counter: key, size: 4, epoch: "e1", marker: M })).toEqual({ first: 1000n, last: 1003n, max: 1010n });
  expect(await scripts.claimBlock({ counter: key, size: 4, epoch: "e1", marker: M })).toEqual({ first: 1004n, last: 1007n, max: 1010n });
  expect(await scripts.claimBlock({ counter: key, size: 4, epoch: "e1", marker: M })).toEqual({ first: 1008n, last: 1010n, max: 1010n }); // cut at max
  await expect(scripts.claimBlock({ counter: key, size: 4, epoch: "e1", marker: M })).rejects.toSatisfy((e) =>
    isIddError(e, "REDIS_EXHAUSTED"),
  );
  expect(await scripts.raiseMax({ counter: key, max: 2000n, epoch: "e1", marker: M })).toBe(2000n);
  expect(await scripts.raiseMax({ counter: key, max: 1500n, epoch: "e1", marker: M })).toBe(2000n); // never lowered
  // A retry with the id of a claim whose answer was lost gets that claim's block, once; a new id, a new block.
  expect(await scripts.claimBlock({ counter: key, size: 5, epoch: "e1", marker: M, claimId: "c1" })).toEqual({
    first: 1011n,
    last: 1015n,
    max: 2000n,
  });
  expect(await scripts.claimBlock({ counter: key, size: 9, epoch: "e1", marker: M, claimId: "c1" })).toEqual({
    first: 1011n,
    last: 1015n,
    max: 2000n,
  });
  expect(await redis.hmget(key, "cur", "max", "epoch")).toEqual(["1015", "2000", "e1"]);
  expect(await scripts.claimBlock({ counter: key, size: 5, epoch: "e1", marker: M, claimId: "c2" })).toEqual({
    first: 1016n,
    last: 1020n,
    max: 2000n,
  });
});

test("claims fail closed on a missing counter and on a stale epoch; initCounter never overwrites", async () => {
  await expect(scripts.claimBlock({ counter: key, size: 1, epoch: "e0", marker: M })).rejects.toSatisfy((e) =>
    isIddError(e, "REDIS_FENCED"),
  );
  await expect(scripts.claimBlock({ counter: `${key}-gone`, size: 1, epoch: "e1", marker: M })).rejects.toSatisfy((e) =>
    isIddError(e, "REDIS_STATE_MISSING"),
  );
  await expect(scripts.raiseMax({ counter: `${key}-gone`, max: 5n, epoch: "e1", marker: M })).rejects.toSatisfy((e) =>
    isIddError(e, "REDIS_STATE_MISSING"),
  );
  await expect(scripts.initCounter({ counter: key, cur: 0n, max: 10n, epoch: "e2", marker: M })).rejects.toSatisfy((e) =>
    isIddError(e, "REDIS_COUNTER_EXISTS"),
  );
  expect(await redis.hget(key, "cur")).toBe("1020");
});

test("every script that hands out or creates numbers refuses without the current marker (Redis lost its state)", async () => {
  const stale = `${M}-before-replay`;
  await expect(scripts.claimBlock({ counter: key, size: 1, epoch: "e1", marker: stale })).rejects.toSatisfy((e) =>
    isIddError(e, "REDIS_STATE_LOST"),
  );
  await expect(scripts.raiseMax({ counter: key, max: 5000n, epoch: "e1", marker: stale })).rejects.toSatisfy((e) =>
    isIddError(e, "REDIS_STATE_LOST"),
  );
  const fresh = counterKey(`smoke-${randomUUID()}`, null);
  await expect(scripts.initCounter({ counter: fresh, cur: 0n, max: 10n, epoch: "1", marker: stale })).rejects.toSatisfy((e) =>
    isIddError(e, "REDIS_STATE_LOST"),
  );
  expect(await redis.exists(fresh)).toBe(0);
  expect(await redis.hget(key, "cur")).toBe("1020");
});

test("fence and restore: claims fail while fenced; restore never lowers cur or max and lifts the fence", async () => {
  const k = counterKey(`smoke-${randomUUID()}`, null);
  await scripts.initCounter({ counter: k, cur: 99n, max: 500n, epoch: "1", marker: M });
  await scripts.claimBlock({ counter: k, size: 50, epoch: "1", marker: M });
  expect(await scripts.fenceCounter({ counter: k, token: "fence-a" })).toEqual({ cur: 149n, max: 500n, epoch: "1" });
  await expect(scripts.claimBlock({ counter: k, size: 1, epoch: "1", marker: M })).rejects.toSatisfy((e) => isIddError(e, "REDIS_FENCED"));
  await expect(scripts.restoreCounter({ counter: k, token: "fence-b", cur: 1000n, max: 2000n, epoch: 2 })).rejects.toSatisfy((e) =>
    isIddError(e, "REDIS_FENCED"),
  );
  expect(await scripts.restoreCounter({ counter: k, token: "fence-a", cur: 120n, max: 300n, epoch: 2 })).toEqual({ cur: 149n, max: 500n }); // never lowered
  expect(await scripts.claimBlock({ counter: k, size: 1, epoch: "2", marker: M })).toEqual({ first: 150n, last: 150n, max: 500n });
  await scripts.fenceCounter({ counter: k, token: "fence-c" });
  expect(await scripts.restoreCounter({ counter: k, token: "fence-c", cur: 700n, max: 900n, epoch: 3 })).toEqual({ cur: 700n, max: 900n });
  expect(await redis.hmget(k, "cur", "max", "epoch")).toEqual(["700", "900", "3"]);
  const gone = counterKey(`smoke-${randomUUID()}`, null);
  expect(await scripts.fenceCounter({ counter: gone, token: "fence-d" })).toEqual({ cur: null, max: null, epoch: null });
  await expect(scripts.claimBlock({ counter: gone, size: 1, epoch: "1", marker: M })).rejects.toSatisfy((e) =>
    isIddError(e, "REDIS_STATE_MISSING"),
  );
  expect(await scripts.restoreCounter({ counter: gone, token: "fence-d", cur: 10n, max: 20n, epoch: 4 })).toEqual({ cur: 10n, max: 20n });
  await redis.del(k, gone);
});

test("takeOwner and recordAnswers: the owner records once per requestId; a stale token or count records nothing", async () => {
  const topic = `smoke-${randomUUID()}`;
  const snow = `smoke-${randomUUID()}`;
  const owner = { topic, partition: 0, partitions: 2 };
  const first = { period: null, ranges: [{ first: 1n, last: 2n }], at: 5 };
  const request = { sequence: "s", requestId: randomUUID() };
  const record = (token: string, answer = first, partitions = 2) =>
    scripts.recordAnswers({
      ...owner,
      partitions,
      token,
      windowMs: 60_000,
      answers: [{ ...request, answer }],
      highs: new Map([[snow, 42n]]),
    });
  await scripts.takeOwner({ ...owner, token: "a" });
  expect(await record("a")).toEqual([undefined]);
  expect(await record("a", { period: null, ranges: [{ first: 3n, last: 3n }], at: 6 })).toEqual([first]); // the first answer, again
  expect(await redis.get(snowflakeHighKey(snow))).toBe("0000000000000000042");
  await expect(record("a", first, 1)).rejects.toSatisfy((e) => isIddError(e, "ROUTE_STALE"));
  await scripts.takeOwner({ ...owner, partitions: 3, token: "b" });
  await expect(record("a")).rejects.toSatisfy((e) => isIddError(e, "WORKER_FENCED"));
  await expect(scripts.takeOwner({ ...owner, token: "c" })).rejects.toSatisfy((e) => isIddError(e, "ROUTE_STALE"));
  await redis.del(ownerKey(topic, 0), routeKey(topic), answerKey("s", request.requestId), snowflakeHighKey(snow));
});
