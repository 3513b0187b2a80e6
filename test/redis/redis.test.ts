import { createHash, randomUUID } from "node:crypto";
import { afterAll, expect, inject, test } from "vitest";
import { isIddError } from "../../src/core/errors.js";
import { answerKey, counterKey, fenceKey, genKey, routeKey, snowflakeHighKey } from "../../src/redis/keys.js";
import { readScripts, Scripts } from "../../src/redis/scripts.js";
import { scriptClient } from "../support/redis.js";

const redis = scriptClient(inject("services").redisUrl);
const scripts = new Scripts(redis);
const seq = `smoke-${randomUUID()}`;
const ref = { sequence: seq, period: "20261121" };
const key = counterKey(seq, "20261121");
const G = Date.now() * 1000;
/** A claim under gen G (the first of this test file: it may take over a fence of no node). */
const claim = (o: {
  size: number;
  epoch: string;
  claimId?: string;
  gen?: number;
  adopt?: boolean;
  sequence?: string;
  period?: string | null;
}) => scripts.claimBlock({ ...ref, gen: G, adopt: true, ...o });

afterAll(async () => {
  await redis.del(key, fenceKey(seq));
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
    "fenceSnowflake",
    "initCounter",
    "raiseMax",
    "recordAnswers",
    "releaseLease",
    "renewLease",
    "restoreCounter",
    "takeOwner",
  ]);
  await scripts.initCounter({ ...ref, cur: 999n, max: 1005n, epoch: "e1" });
  const shas = files.map((s) => createHash("sha1").update(s.lua).digest("hex"));
  const loaded = (await redis.script("EXISTS", ...shas)) as number[];
  expect(loaded[files.findIndex((s) => s.name === "initCounter")]).toBe(1);
  const before = await evalshaCalls();
  expect(await scripts.raiseMax({ ...ref, max: 1010n, epoch: "e1" })).toBe(1010n);
  expect(await scripts.raiseMax({ ...ref, max: 1010n, epoch: "e1" })).toBe(1010n);
  expect(await evalshaCalls()).toBeGreaterThanOrEqual(before + 1);
});

test("claimBlock hands out consecutive blocks within max, then refuses until max is raised", async () => {
  expect(await claim({ size: 4, epoch: "e1" })).toMatchObject({ first: 1000n, last: 1003n, max: 1010n });
  expect(await claim({ size: 4, epoch: "e1", adopt: false })).toMatchObject({ first: 1004n, last: 1007n, max: 1010n });
  expect(await claim({ size: 4, epoch: "e1" })).toMatchObject({ first: 1008n, last: 1010n, max: 1010n }); // cut at max
  await expect(claim({ size: 4, epoch: "e1" })).rejects.toSatisfy((e) => isIddError(e, "REDIS_EXHAUSTED"));
  expect(await scripts.raiseMax({ ...ref, max: 2000n, epoch: "e1" })).toBe(2000n);
  expect(await scripts.raiseMax({ ...ref, max: 1500n, epoch: "e1" })).toBe(2000n); // never lowered
  // A retry with the id of a claim whose answer was lost gets that claim's block, once; a new id, a new block.
  expect(await claim({ size: 5, epoch: "e1", claimId: "c1" })).toMatchObject({ first: 1011n, last: 1015n, max: 2000n });
  expect(await claim({ size: 9, epoch: "e1", claimId: "c1" })).toMatchObject({ first: 1011n, last: 1015n, max: 2000n });
  expect(await redis.hmget(key, "cur", "max", "epoch")).toEqual(["1015", "2000", "e1"]);
  expect(await claim({ size: 5, epoch: "e1", claimId: "c2" })).toMatchObject({ first: 1016n, last: 1020n, max: 2000n });
  expect(await redis.hmget(fenceKey(seq), "gen")).toEqual([String(G)]);
});

test("claimBlock returns the three claims before it (for its retry too); a release without claimRec leaves one unknown", async () => {
  const s = `smoke-${randomUUID()}`;
  const r = { sequence: s, period: null };
  const k = counterKey(s, null);
  const c = (claimId: string, worker: string, writeAhead: boolean, atMs: number) =>
    scripts.claimBlock({ ...r, size: 10, epoch: "1", gen: G, adopt: true, claimId, worker, writeAhead, atMs });
  const rec = (id: string, first: bigint, worker: string, writeAhead: boolean, atMs: number) => ({
    id,
    first,
    last: first + 9n,
    gen: G,
    epoch: 1,
    writeAhead,
    at: new Date(atMs),
    worker,
  });
  await scripts.initCounter({ ...r, cur: 0n, max: 1000n, epoch: "1" });
  expect(await c("a", "w1", true, 1_000)).toEqual({ first: 1n, last: 10n, max: 1000n, previous: [] }); // the counter's first claim
  const a = rec("a", 1n, "w1", true, 1_000);
  expect(await c("b", "w|2", false, 2_000)).toEqual({ first: 11n, last: 20n, max: 1000n, previous: [a] });
  // The answer of "b" was lost: its retry gets the same block and the same claims before it.
  expect(await c("b", "w|2", false, 9_999)).toEqual({ first: 11n, last: 20n, max: 1000n, previous: [a] });
  const b = rec("b", 11n, "w|2", false, 2_000);
  expect((await c("c", "w3", true, 3_000)).previous).toEqual([b, a]);
  const cc = rec("c", 21n, "w3", true, 3_000);
  expect((await c("d", "w4", true, 4_000)).previous).toEqual([cc, b, a]);
  const d = rec("d", 31n, "w4", true, 4_000);
  expect((await c("e", "w5", true, 5_000)).previous).toEqual([d, cc, b]); // three at most
  // A claim of an older release moves `claim` only: what claimRec holds is not that claim's, so that
  // one is unknown; the ones before it are still returned.
  await redis.hset(k, "claim", "old", "claimFirst", "51", "claimLast", "60", "cur", "60");
  expect(await c("f", "w6", true, 6_000)).toEqual({ first: 61n, last: 70n, max: 1000n, previous: [d, cc] });
  expect(await redis.hexists(k, "prevRec")).toBe(0);
  await redis.del(k, fenceKey(s));
});

test("claims fail on a missing counter, a stale epoch, a suspect node and a newer gen; initCounter never overwrites", async () => {
  await expect(claim({ size: 1, epoch: "e0" })).rejects.toSatisfy((e) => isIddError(e, "REDIS_FENCED"));
  await expect(claim({ size: 1, epoch: "e1", period: "gone" })).rejects.toSatisfy((e) => isIddError(e, "REDIS_STATE_MISSING"));
  await expect(scripts.raiseMax({ ...ref, period: "gone", max: 5n, epoch: "e1" })).rejects.toSatisfy((e) =>
    isIddError(e, "REDIS_STATE_MISSING"),
  );
  await expect(scripts.initCounter({ ...ref, cur: 0n, max: 10n, epoch: "e2" })).rejects.toSatisfy((e) =>
    isIddError(e, "REDIS_COUNTER_EXISTS"),
  );
  // An older gen is superseded; whatever its adopt flag.
  await expect(claim({ size: 1, epoch: "e1", gen: G - 1 })).rejects.toSatisfy((e) => isIddError(e, "WORKER_FENCED"));
  expect(await redis.hget(key, "cur")).toBe("1020");
  // Written under another node (a restart, a failover): suspect, whatever the epoch.
  const node = await redis.hget(key, "node");
  await redis.hset(key, "node", "another-primary");
  await expect(claim({ size: 1, epoch: "e1" })).rejects.toSatisfy((e) => isIddError(e, "REDIS_STATE_SUSPECT"));
  await expect(scripts.raiseMax({ ...ref, max: 5000n, epoch: "e1" })).rejects.toSatisfy((e) => isIddError(e, "REDIS_STATE_SUSPECT"));
  await redis.hset(key, "node", node as string);
  // A fence of another node (or none) is taken over only by a claim that adopts it.
  await redis.hset(fenceKey(seq), "node", "another-primary");
  await expect(claim({ size: 1, epoch: "e1", adopt: false })).rejects.toSatisfy((e) => isIddError(e, "WORKER_FENCED"));
  expect(await claim({ size: 1, epoch: "e1", gen: G - 5 })).toMatchObject({ first: 1021n, last: 1021n, max: 2000n }); // adopts, even a lower gen
  expect(await redis.hget(fenceKey(seq), "node")).toBe(node);
  expect(await claim({ size: 1, epoch: "e1", adopt: false })).toMatchObject({ first: 1022n, last: 1022n, max: 2000n });
});

test("fence and restore: claims fail while fenced; restore never lowers cur or max, marks the node and lifts the fence", async () => {
  const s = `smoke-${randomUUID()}`;
  const r = { sequence: s, period: null };
  const k = counterKey(s, null);
  const c = (epoch: string) => scripts.claimBlock({ ...r, size: 1, epoch, gen: G, adopt: true });
  await scripts.initCounter({ ...r, cur: 99n, max: 500n, epoch: "1" });
  await scripts.claimBlock({ ...r, size: 50, epoch: "1", gen: G, adopt: true });
  const node = await redis.hget(k, "node");
  expect(await scripts.fenceCounter({ ...r, token: "fence-x", onlySuspect: true })).toBeUndefined(); // current: left alone
  expect(await scripts.fenceCounter({ ...r, token: "fence-a" })).toEqual({ cur: 149n, max: 500n, epoch: "1", node });
  await expect(c("1")).rejects.toSatisfy((e) => isIddError(e, "REDIS_FENCED"));
  await expect(scripts.restoreCounter({ ...r, token: "fence-b", cur: 1000n, max: 2000n, epoch: 2 })).rejects.toSatisfy((e) =>
    isIddError(e, "REDIS_FENCED"),
  );
  expect(await scripts.restoreCounter({ ...r, token: "fence-a", cur: 120n, max: 300n, epoch: 2 })).toEqual({ cur: 149n, max: 500n }); // never lowered
  expect(await c("2")).toMatchObject({ first: 150n, last: 150n, max: 500n });
  await redis.hset(k, "node", "old");
  expect(await scripts.fenceCounter({ ...r, token: "fence-c", onlySuspect: true })).toMatchObject({ cur: 150n, node: "old" });
  expect(await scripts.restoreCounter({ ...r, token: "fence-c", cur: 700n, max: 900n, epoch: 3 })).toEqual({ cur: 700n, max: 900n });
  expect(await redis.hmget(k, "cur", "max", "epoch", "node")).toEqual(["700", "900", "3", node]);
  const gone = { sequence: `smoke-${randomUUID()}`, period: null };
  expect(await scripts.fenceCounter({ ...gone, token: "fence-d", onlySuspect: true })).toEqual({
    cur: null,
    max: null,
    epoch: null,
    node: null,
  });
  await expect(scripts.claimBlock({ ...gone, size: 1, epoch: "1", gen: G, adopt: true })).rejects.toSatisfy((e) =>
    isIddError(e, "REDIS_STATE_MISSING"),
  );
  expect(await scripts.restoreCounter({ ...gone, token: "fence-d", cur: 10n, max: 20n, epoch: 4 })).toEqual({ cur: 10n, max: 20n });
  await redis.del(k, fenceKey(s), counterKey(gone.sequence, null));
});

test("takeOwner, fenceSnowflake and recordAnswers: gens grow; a record needs the fence at its gen; answers once per requestId", async () => {
  const topic = `smoke-${randomUUID()}`;
  const snow = `smoke-${randomUUID()}`;
  const g1 = await scripts.takeOwner({ topic, partitions: 2 });
  expect(g1).toBeGreaterThan(Date.now() * 1000); // a new key: the margin after a node change applies
  const g2 = await scripts.takeOwner({ topic, partitions: 2 });
  expect(g2).toBe(g1 + 1); // TIME is behind the margin: the last gen + 1
  await expect(scripts.takeOwner({ topic, partitions: 1 })).rejects.toSatisfy((e) => isIddError(e, "ROUTE_STALE"));
  const first = { period: null, ranges: [{ first: 1n, last: 2n }], at: 5 };
  const requestId = randomUUID();
  const record = (gen: number, answer = first, high?: bigint) =>
    scripts.recordAnswers({
      gen,
      windowMs: 60_000,
      sequences: [{ sequence: snow, answers: [{ sequence: snow, requestId, answer }], ...(high && { high }) }],
    });
  await expect(record(g1)).rejects.toSatisfy((e) => isIddError(e, "WORKER_FENCED")); // no fence yet
  expect(await scripts.fenceSnowflake({ sequence: snow, gen: g1 })).toBeUndefined();
  expect(await record(g1, first, 42n)).toEqual([undefined]);
  expect(await record(g1, { period: null, ranges: [{ first: 3n, last: 3n }], at: 6 })).toEqual([first]); // the first answer, again
  expect(await redis.get(snowflakeHighKey(snow))).toBe("0000000000000000042");
  expect(await scripts.fenceSnowflake({ sequence: snow, gen: g2 })).toBe(42n);
  await expect(record(g1)).rejects.toSatisfy((e) => isIddError(e, "WORKER_FENCED"));
  await expect(scripts.fenceSnowflake({ sequence: snow, gen: g1 })).rejects.toSatisfy((e) => isIddError(e, "WORKER_FENCED"));
  await redis.del(genKey(topic), routeKey(topic), answerKey(snow, requestId), snowflakeHighKey(snow), fenceKey(snow));
});

test("recordAnswers over several sequences: all recorded in one call, or none when one fence is not at the gen", async () => {
  const topic = `smoke-${randomUUID()}`;
  const [a, b, c] = [0, 1, 2].map(() => `smoke-${randomUUID()}`) as [string, string, string];
  const g1 = await scripts.takeOwner({ topic, partitions: 1 });
  const g2 = await scripts.takeOwner({ topic, partitions: 1 });
  for (const s of [a, b, c]) await scripts.fenceSnowflake({ sequence: s, gen: g1 });
  const answer = (first: bigint) => ({ period: null, ranges: [{ first, last: first }], at: 1 });
  const of = (sequence: string, requestId: string, first: bigint) => ({ sequence, requestId, answer: answer(first) });
  const call = (gen: number, r: string) =>
    scripts.recordAnswers({
      gen,
      windowMs: 60_000,
      sequences: [
        { sequence: a, answers: [of(a, r, 1n), of(a, `${r}-2`, 2n)], high: 7n },
        { sequence: b, answers: [] },
        { sequence: c, answers: [of(c, r, 3n)] },
      ],
    });
  expect(await call(g1, "r1")).toEqual([undefined, undefined, undefined]);
  expect(await redis.get(snowflakeHighKey(a))).toBe("0000000000000000007");
  expect(await call(g1, "r1")).toEqual([answer(1n), answer(2n), answer(3n)]); // each answered before, in call order
  // A newer gen takes b (the middle one): a call under the old gen records nothing, not even a's or c's.
  await scripts.fenceSnowflake({ sequence: b, gen: g2 });
  await expect(call(g1, "r2")).rejects.toMatchObject({
    code: "WORKER_FENCED",
    message: expect.stringMatching(new RegExp(`^sequence ${b}:`)),
  });
  expect(await redis.exists(answerKey(a, "r2"), answerKey(a, "r2-2"), answerKey(c, "r2"))).toBe(0);
  const keys = [a, b, c].flatMap((s) => [fenceKey(s), snowflakeHighKey(s), answerKey(s, "r1"), answerKey(s, "r1-2")]);
  await redis.del(genKey(topic), routeKey(topic), ...keys);
});
