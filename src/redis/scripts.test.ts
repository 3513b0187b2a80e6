/** The Redis adapter without Redis: argument builders, the failure table, and result mapping over a fake connection. */
import { describe, expect, test } from "vitest";
import { IddError, isIddError } from "../core/errors.js";
import { answerKey, counterKey, fenceKey, genKey, routeKey, snowflakeHighKey, snowflakeLeasePrefix, snowflakeUntilKey } from "./keys.js";
import {
  acquireLeaseArgs,
  claimBlockArgs,
  fenceCounterArgs,
  fenceSnowflakeArgs,
  GEN_MARGIN_US,
  initCounterArgs,
  raiseMaxArgs,
  recordAnswersArgs,
  releaseLeaseArgs,
  renewLeaseArgs,
  restoreCounterArgs,
  type ScriptCall,
  takeOwnerArgs,
} from "./script-args.js";
import { SCRIPT_FAILURES, SCRIPT_NAMES, type ScriptName, scriptError } from "./script-errors.js";
import { parseClaimRecord, type RunScript, readScripts, Scripts } from "./scripts.js";
import { encodeAnswer } from "./stored-answer.js";

const ref = { sequence: "orders", period: "20261123" };
const counter = counterKey("orders", "20261123");
const answer = { period: "20261123", ranges: [{ first: 7n, last: 9n }], at: 1_700_000_000_000 };
const GEN = 1_795_486_601_239_673;
const orders = { sequence: "orders", answers: [{ sequence: "orders", requestId: "r1", answer }] };
const record = { gen: GEN, windowMs: 60_000, sequences: [orders] };
/** One call of each script, as its caller builds it. */
const CALLS: Record<ScriptName, ScriptCall> = {
  claimBlock: claimBlockArgs({
    ...ref,
    size: 100,
    epoch: "3",
    claimId: "c1",
    gen: GEN,
    adopt: true,
    worker: "w|1",
    writeAhead: true,
    atMs: 1_700_000_000_000.5,
  }),
  raiseMax: raiseMaxArgs({ ...ref, max: 2n ** 60n, epoch: "3" }),
  initCounter: initCounterArgs({ ...ref, cur: 0n, max: 500n, epoch: "1" }),
  fenceCounter: fenceCounterArgs({ ...ref, token: "fence" }),
  restoreCounter: restoreCounterArgs({ ...ref, token: "fence", cur: 10n, max: 20n, epoch: 4 }),
  acquireLease: acquireLeaseArgs({ sequence: "snow", token: "t", ttlMs: 10_000, ids: 1024, firstId: 5, untilMs: 1000, acceptMs: 20 }),
  renewLease: renewLeaseArgs({ sequence: "snow", workerId: 5, token: "t", ttlMs: 10_000, untilMs: 2000 }),
  releaseLease: releaseLeaseArgs({ sequence: "snow", workerId: 5, token: "t", finalMs: null }),
  takeOwner: takeOwnerArgs({ topic: "idd.requests", partitions: 6 }),
  fenceSnowflake: fenceSnowflakeArgs({ sequence: "snow", gen: GEN }),
  recordAnswers: recordAnswersArgs({ ...record, sequences: [{ ...orders, high: 42n }] }),
};

/** The part of a key Redis Cluster hashes: between the first { and the next }. */
const hashTag = (key: string) => /\{([^}]*)\}/.exec(key)?.[1];

describe("argument builders", () => {
  test("one per script in lua/, each with as many KEYS as its file name says", () => {
    const files = readScripts();
    expect(files.map((f) => f.name).sort()).toEqual([...SCRIPT_NAMES].sort());
    for (const f of files) if (f.numberOfKeys !== undefined) expect(CALLS[f.name as ScriptName].keys, f.name).toHaveLength(f.numberOfKeys);
  });

  test("every call's keys carry one hash tag (one Redis Cluster slot), and no script names a key of its own", () => {
    for (const [name, call] of Object.entries(CALLS)) {
      const tags = new Set(call.keys.map(hashTag));
      expect([...tags], name).toHaveLength(1);
      expect([...tags][0], name).toBeTruthy();
    }
    // Keys come only from KEYS (or are built from a KEYS prefix): no quoted key names in the Lua.
    for (const f of readScripts()) expect(f.lua, f.name).not.toMatch(/redis\.call\("[A-Z]+", "[^"]*:/);
  });

  test("counter scripts: the counter (and the fence for claims), then ARGV in header order, numbers as decimal strings", () => {
    expect(CALLS.claimBlock).toEqual({
      keys: [counter, fenceKey("orders")],
      args: ["100", "3", "c1", String(GEN), "1", "w|1", "s", "1700000000000"],
    });
    const relaxed = claimBlockArgs({
      ...ref,
      size: 1,
      epoch: "3",
      claimId: "c",
      gen: 5,
      adopt: false,
      worker: "w",
      writeAhead: false,
      atMs: 1,
    });
    expect(relaxed.args.slice(4, 7)).toEqual(["0", "w", "r"]);
    expect(CALLS.raiseMax).toEqual({ keys: [counter], args: ["1152921504606846976", "3"] });
    expect(CALLS.initCounter).toEqual({ keys: [counter], args: ["0", "500", "1"] });
    expect(CALLS.fenceCounter).toEqual({ keys: [counter], args: ["fence", ""] });
    expect(fenceCounterArgs({ ...ref, token: "f", onlySuspect: true }).args).toEqual(["f", "1"]);
    expect(CALLS.restoreCounter).toEqual({ keys: [counter], args: ["fence", "10", "20", "4"] });
  });

  test("lease scripts: keys under the sequence's {seq:} tag; no final bound is an empty string", () => {
    expect(CALLS.acquireLease).toEqual({
      keys: [snowflakeUntilKey("snow"), snowflakeLeasePrefix("snow")],
      args: ["t", "10000", "1024", "5", "1000", "20", "lost"],
    });
    expect(CALLS.renewLease).toEqual({ keys: ["{seq:snow}:lease:5", "{seq:snow}:until"], args: ["t", "10000", "5", "2000"] });
    expect(CALLS.releaseLease.args).toEqual(["t", "5", ""]);
    expect(releaseLeaseArgs({ sequence: "snow", workerId: 5, token: "t", finalMs: 1234 }).args).toEqual(["t", "5", "1234"]);
  });

  test("takeOwner: the topic's gen and route keys; fenceSnowflake and recordAnswers: the sequence's fence, high mark and answers", () => {
    expect(CALLS.takeOwner).toEqual({ keys: ["{idd:idd.requests}:gen", "{idd:idd.requests}:route"], args: ["6", String(GEN_MARGIN_US)] });
    expect([genKey("t"), routeKey("t")]).toEqual(["{idd:t}:gen", "{idd:t}:route"]);
    expect(CALLS.fenceSnowflake).toEqual({ keys: ["{seq:snow}:fence", "{seq:snow}:high"], args: [String(GEN)] });
    expect(CALLS.recordAnswers).toEqual({
      keys: [fenceKey("orders"), snowflakeHighKey("orders"), answerKey("orders", "r1")],
      args: [String(GEN), "60000", "1", "0000000000000000042", encodeAnswer(answer)],
    });
    expect(answerKey("orders", "r1")).toBe("{seq:orders}:answer:r1");
    expect(recordAnswersArgs(record).args[3]).toBe(""); // a counter sequence: no high mark
    expect(() => recordAnswersArgs({ ...record, sequences: [{ ...orders, sequence: "other" }] })).toThrow(
      /for other was given an answer of orders/,
    );
    // Several sequences in one call (one Redis, not a Cluster): each one's fence, high mark and answers in turn.
    const two = recordAnswersArgs({ ...record, sequences: [{ sequence: "idle", answers: [] }, orders] });
    expect(two).toEqual({
      keys: [fenceKey("idle"), snowflakeHighKey("idle"), fenceKey("orders"), snowflakeHighKey("orders"), answerKey("orders", "r1")],
      args: [String(GEN), "60000", "0", "", "1", "", encodeAnswer(answer)],
    });
    expect(encodeAnswer(answer)).toBe('["20261123",1700000000000,"7","9"]');
  });
});

describe("the failure table", () => {
  test("lists, per script, exactly the negative codes its Lua returns", () => {
    for (const f of readScripts()) {
      // A code alone, or first in a table with what it concerns (recordAnswers: which sequence).
      const returned = [...f.lua.matchAll(/return (?:\{ )?(-\d+)/g)].map((m) => Number(m[1]));
      const listed = Object.keys(SCRIPT_FAILURES[f.name as ScriptName]).map(Number);
      expect(listed.sort(), f.name).toEqual([...new Set(returned)].sort());
    }
  });

  test("a listed code becomes its error; anything else is REDIS_SCRIPT_FAILED", () => {
    const fenced = scriptError("claimBlock", counter, -2);
    expect(fenced).toMatchObject({ code: "REDIS_FENCED", retriable: true, message: `claimBlock on ${counter}: REDIS_FENCED` });
    expect(scriptError("claimBlock", counter, -8)).toMatchObject({ code: "REDIS_STATE_SUSPECT", retriable: true });
    expect(scriptError("claimBlock", counter, -9)).toMatchObject({ code: "WORKER_FENCED", retriable: false });
    expect(scriptError("claimBlock", counter, -10)).toMatchObject({ code: "WORKER_FENCED" });
    expect(scriptError("acquireLease", "k", -6)).toMatchObject({ code: "WORKER_IDS_EXHAUSTED", retriable: true });
    expect(scriptError("recordAnswers", "p", -9, "newer owner")).toMatchObject({
      code: "WORKER_FENCED",
      retriable: false,
      message: "newer owner",
    });
    expect(scriptError("initCounter", counter, -2)).toMatchObject({
      code: "REDIS_SCRIPT_FAILED",
      message: `initCounter on ${counter} returned -2`,
    });
    expect(scriptError("fenceCounter", counter, "OK")).toBeInstanceOf(IddError);
  });
});

describe("Scripts over a fake connection", () => {
  const answering = (result: unknown) => {
    const calls: [ScriptName, ScriptCall][] = [];
    const run: RunScript = async (script, call) => {
      calls.push([script, call]);
      return result;
    };
    return { scripts: new Scripts(run), calls };
  };

  test("sends what the builders build", async () => {
    const { scripts, calls } = answering([null]);
    await scripts.recordAnswers({ ...record, sequences: [{ ...orders, high: 42n }] });
    expect(calls).toEqual([["recordAnswers", CALLS.recordAnswers]]);
  });

  test("takeOwner: {gen} is the gen; a count in force is ROUTE_STALE", async () => {
    await expect(answering([GEN]).scripts.takeOwner({ topic: "t", partitions: 6 })).resolves.toBe(GEN);
    const stale = answering(8).scripts.takeOwner({ topic: "t", partitions: 6 });
    await expect(stale).rejects.toMatchObject({ code: "ROUTE_STALE", retriable: true });
    await expect(stale).rejects.toThrow("the request topic has 8 partitions in force; this worker routed by 6");
  });

  test("fenceSnowflake: the high mark or none; -9 is WORKER_FENCED", async () => {
    await expect(answering(["0000000000000000042"]).scripts.fenceSnowflake({ sequence: "s", gen: 1 })).resolves.toBe(42n);
    await expect(answering([null]).scripts.fenceSnowflake({ sequence: "s", gen: 1 })).resolves.toBeUndefined();
    await expect(answering(-9).scripts.fenceSnowflake({ sequence: "s", gen: 1 })).rejects.toMatchObject({ code: "WORKER_FENCED" });
  });

  test("recordAnswers: earlier answers decoded; -9 and -10 (with the sequence's place) are WORKER_FENCED", async () => {
    const earlier = { period: null, ranges: [{ first: 1n, last: 1n }] };
    expect(await answering([null, encodeAnswer(earlier), encodeAnswer(answer)]).scripts.recordAnswers(record)).toEqual([
      undefined,
      earlier,
      answer,
    ]);
    await expect(answering([-9, 1]).scripts.recordAnswers(record)).rejects.toMatchObject({
      code: "WORKER_FENCED",
      retriable: false,
      message: `sequence orders: not recorded under gen ${GEN}: a newer gen claimed it`,
    });
    await expect(answering([-10, 1]).scripts.recordAnswers(record)).rejects.toThrow("Redis may have lost its fence");
    const two = { ...record, sequences: [{ sequence: "idle", answers: [] }, orders] };
    await expect(answering([-9, 2]).scripts.recordAnswers(two)).rejects.toMatchObject({
      code: "WORKER_FENCED",
      message: `sequence orders: not recorded under gen ${GEN}: a newer gen claimed it (nor the call's 1 other sequences)`,
    });
    await expect(answering(3).scripts.recordAnswers(record)).rejects.toSatisfy((e) => isIddError(e, "REDIS_SCRIPT_FAILED"));
  });

  test("counter and lease results become values or their table's errors", async () => {
    const claim = { ...ref, size: 5, epoch: "1", gen: GEN, adopt: false };
    expect(await answering([5, 9, 100]).scripts.claimBlock(claim)).toEqual({
      first: 5n,
      last: 9n,
      max: 100n,
      previous: [],
    });
    // The claims before it, as the script keeps them: the claimant's id may hold the separator; an
    // unknown one (nil) is left out.
    const c0 = { id: "c0", first: 1n, last: 4n, gen: GEN, epoch: 2, writeAhead: true, at: new Date(1700000000123), worker: "host|7" };
    expect(await answering([5, 9, 100, null, `c0|1|4|${GEN}|2|s|1700000000123|host|7`, null]).scripts.claimBlock(claim)).toEqual({
      first: 5n,
      last: 9n,
      max: 100n,
      previous: [c0],
    });
    expect(parseClaimRecord("c0|1|4|5|2|x|1|w")).toBeUndefined();
    await expect(answering(-3).scripts.claimBlock(claim)).rejects.toMatchObject({
      code: "REDIS_EXHAUSTED",
      retriable: true,
    });
    expect(await answering(["3", null, "2", "n1"]).scripts.fenceCounter({ ...ref, token: "f" })).toEqual({
      cur: 3n,
      max: null,
      epoch: "2",
      node: "n1",
    });
    expect(await answering(-4).scripts.fenceCounter({ ...ref, token: "f", onlySuspect: true })).toBeUndefined();
    expect(
      await answering([3, "1500", 1]).scripts.acquireLease({
        sequence: "s",
        token: "t",
        ttlMs: 1,
        ids: 4,
        firstId: 0,
        untilMs: 1,
        acceptMs: 1,
      }),
    ).toEqual({
      workerId: 3,
      floorMs: 1500,
      heldOff: true,
    });
    const asked = answering([-1, 1700000000123, "abc"]);
    const ask = { sequence: "s", token: "t", ttlMs: 1, ids: 4, firstId: 0, untilMs: 1, acceptMs: 1 } as const;
    expect(await asked.scripts.acquireLease({ ...ask, missing: "ask" })).toEqual({ missing: { redisMs: 1700000000123, node: "abc" } });
    await asked.scripts.acquireLease({ ...ask, missing: { node: "abc", untilRedisMs: 1700000000623 } });
    expect(asked.calls.map(([, c]) => c.args.slice(6))).toEqual([["ask"], ["new", "abc", "1700000000623"]]);
    await expect(answering(-7).scripts.renewLease({ sequence: "s", workerId: 1, token: "t", ttlMs: 1, untilMs: 1 })).rejects.toMatchObject({
      code: "LEASE_LOST",
      message: "renewLease on {seq:s}:lease:1: LEASE_LOST",
    });
    expect(await answering(-7).scripts.releaseLease({ sequence: "s", workerId: 1, token: "t", finalMs: null })).toBe(false);
  });

  test("a claim without an id gets a fresh one each time", async () => {
    const { scripts, calls } = answering([1, 1, 1]);
    await scripts.claimBlock({ ...ref, size: 1, epoch: "1", gen: 1, adopt: false });
    await scripts.claimBlock({ ...ref, size: 1, epoch: "1", gen: 1, adopt: false });
    const ids = calls.map(([, c]) => c.args[2]);
    expect(ids[0]).not.toBe(ids[1]);
  });
});
