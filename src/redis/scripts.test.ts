/** The Redis adapter without Redis: argument builders, the failure table, and result mapping over a fake connection. */
import { describe, expect, test } from "vitest";
import { IddError, isIddError } from "../core/errors.js";
import {
  answerKey,
  counterKey,
  MARKER_KEY,
  ownerKey,
  routeKey,
  snowflakeHighKey,
  snowflakeLeasePrefix,
  snowflakeUntilKey,
} from "./keys.js";
import {
  acquireLeaseArgs,
  claimBlockArgs,
  fenceCounterArgs,
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
import { type RunScript, readScripts, Scripts } from "./scripts.js";
import { encodeAnswer } from "./stored-answer.js";

const counter = counterKey("orders", "20261123");
const answer = { period: "20261123", ranges: [{ first: 7n, last: 9n }], at: 1_700_000_000_000 };
const record = {
  topic: "idd.requests",
  partition: 3,
  token: "t1",
  partitions: 6,
  windowMs: 60_000,
  answers: [{ sequence: "orders", requestId: "r1", answer }],
  highs: new Map([["snow", 42n]]),
};
/** One call of each script, as its caller builds it. */
const CALLS: Record<ScriptName, ScriptCall> = {
  claimBlock: claimBlockArgs({ counter, size: 100, epoch: "3", marker: "m", claimId: "c1" }),
  raiseMax: raiseMaxArgs({ counter, max: 2n ** 60n, epoch: "3", marker: "m" }),
  initCounter: initCounterArgs({ counter, cur: 0n, max: 500n, epoch: "1", marker: "m" }),
  fenceCounter: fenceCounterArgs({ counter, token: "fence" }),
  restoreCounter: restoreCounterArgs({ counter, token: "fence", cur: 10n, max: 20n, epoch: 4 }),
  acquireLease: acquireLeaseArgs({ sequence: "snow", token: "t", ttlMs: 10_000, ids: 1024, firstId: 5, untilMs: 1000, acceptMs: 20 }),
  renewLease: renewLeaseArgs({ sequence: "snow", workerId: 5, token: "t", ttlMs: 10_000, untilMs: 2000 }),
  releaseLease: releaseLeaseArgs({ sequence: "snow", workerId: 5, token: "t", finalMs: null }),
  takeOwner: takeOwnerArgs({ topic: "idd.requests", partition: 3, token: "t1", partitions: 6 }),
  recordAnswers: recordAnswersArgs(record),
};

describe("argument builders", () => {
  test("one per script in lua/, each with as many KEYS as its file name says", () => {
    const files = readScripts();
    expect(files.map((f) => f.name).sort()).toEqual([...SCRIPT_NAMES].sort());
    for (const f of files) if (f.numberOfKeys !== undefined) expect(CALLS[f.name as ScriptName].keys, f.name).toHaveLength(f.numberOfKeys);
  });

  test("counter scripts: the counter and the marker, then ARGV in header order, numbers as decimal strings", () => {
    expect(CALLS.claimBlock).toEqual({ keys: [counter, MARKER_KEY], args: ["100", "3", "m", "c1"] });
    expect(CALLS.raiseMax).toEqual({ keys: [counter, MARKER_KEY], args: ["1152921504606846976", "3", "m"] });
    expect(CALLS.initCounter).toEqual({ keys: [counter, MARKER_KEY], args: ["0", "500", "1", "m"] });
    expect(CALLS.fenceCounter).toEqual({ keys: [counter], args: ["fence"] });
    expect(CALLS.restoreCounter).toEqual({ keys: [counter], args: ["fence", "10", "20", "4"] });
  });

  test("lease scripts: keys under the sequence's {snow:} tag; no final bound is an empty string", () => {
    expect(CALLS.acquireLease).toEqual({
      keys: [snowflakeUntilKey("snow"), snowflakeLeasePrefix("snow")],
      args: ["t", "10000", "1024", "5", "1000", "20"],
    });
    expect(CALLS.renewLease).toEqual({ keys: ["{snow:snow}:lease:5", "{snow:snow}:until"], args: ["t", "10000", "5", "2000"] });
    expect(CALLS.releaseLease.args).toEqual(["t", "5", ""]);
    expect(releaseLeaseArgs({ sequence: "snow", workerId: 5, token: "t", finalMs: 1234 }).args).toEqual(["t", "5", "1234"]);
  });

  test("takeOwner and recordAnswers: owner and route keys, then one answer key per answer and one high key per snowflake sequence", () => {
    expect(CALLS.takeOwner).toEqual({ keys: ["idd:owner:idd.requests:3", "idd:route:idd.requests"], args: ["t1", "6"] });
    expect(CALLS.recordAnswers).toEqual({
      keys: [ownerKey("idd.requests", 3), routeKey("idd.requests"), answerKey("orders", "r1"), snowflakeHighKey("snow")],
      args: ["t1", "6", "60000", "1", encodeAnswer(answer), "0000000000000000042"],
    });
    expect(encodeAnswer(answer)).toBe('["20261123",1700000000000,"7","9"]');
  });
});

describe("the failure table", () => {
  test("lists, per script, exactly the negative codes its Lua returns", () => {
    for (const f of readScripts()) {
      const returned = [...f.lua.matchAll(/return (-\d+)/g)].map((m) => Number(m[1]));
      const listed = Object.keys(SCRIPT_FAILURES[f.name as ScriptName]).map(Number);
      expect(listed.sort(), f.name).toEqual([...new Set(returned)].sort());
    }
  });

  test("a listed code becomes its error; anything else is REDIS_SCRIPT_FAILED", () => {
    const fenced = scriptError("claimBlock", counter, -2);
    expect(fenced).toMatchObject({ code: "REDIS_FENCED", retriable: true, message: `claimBlock on ${counter}: REDIS_FENCED` });
    expect(scriptError("claimBlock", counter, -5)).toMatchObject({ code: "REDIS_STATE_LOST", retriable: false });
    expect(scriptError("acquireLease", "k", -6)).toMatchObject({ code: "WORKER_IDS_EXHAUSTED", retriable: true });
    expect(scriptError("recordAnswers", "p", -2, "newer owner")).toMatchObject({
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
  const owner = { topic: "idd.requests", partition: 3, token: "t1", partitions: 6 };

  test("sends what the builders build", async () => {
    const { scripts, calls } = answering([null]);
    await scripts.recordAnswers(record);
    expect(calls).toEqual([["recordAnswers", CALLS.recordAnswers]]);
  });

  test("takeOwner: 0 takes the partition; a count in force is ROUTE_STALE", async () => {
    await expect(answering(0).scripts.takeOwner(owner)).resolves.toBeUndefined();
    const stale = answering(8).scripts.takeOwner(owner);
    await expect(stale).rejects.toMatchObject({ code: "ROUTE_STALE", retriable: true });
    await expect(stale).rejects.toThrow("the request topic has 8 partitions in force; this worker routed by 6");
  });

  test("recordAnswers: earlier answers decoded, -2 is WORKER_FENCED, any count is ROUTE_STALE", async () => {
    const earlier = { period: null, ranges: [{ first: 1n, last: 1n }] };
    expect(await answering([null, encodeAnswer(earlier), encodeAnswer(answer)]).scripts.recordAnswers(record)).toEqual([
      undefined,
      earlier,
      answer,
    ]);
    const fenced = answering(-2).scripts.recordAnswers(record);
    await expect(fenced).rejects.toMatchObject({
      code: "WORKER_FENCED",
      retriable: false,
      message: "partition 3 has a newer owner than token t1",
    });
    await expect(answering(0).scripts.recordAnswers(record)).rejects.toSatisfy((e) => isIddError(e, "ROUTE_STALE"));
    await expect(answering(12).scripts.recordAnswers(record)).rejects.toSatisfy((e) => isIddError(e, "ROUTE_STALE"));
  });

  test("counter and lease results become values or their table's errors", async () => {
    expect(await answering([5, 9, 100]).scripts.claimBlock({ counter, size: 5, epoch: "1", marker: "m" })).toEqual({
      first: 5n,
      last: 9n,
      max: 100n,
    });
    await expect(answering(-3).scripts.claimBlock({ counter, size: 5, epoch: "1", marker: "m" })).rejects.toMatchObject({
      code: "REDIS_EXHAUSTED",
      retriable: true,
    });
    expect(await answering(["3", null, "2"]).scripts.fenceCounter({ counter, token: "f" })).toEqual({ cur: 3n, max: null, epoch: "2" });
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
    await expect(answering(-7).scripts.renewLease({ sequence: "s", workerId: 1, token: "t", ttlMs: 1, untilMs: 1 })).rejects.toMatchObject({
      code: "LEASE_LOST",
      message: "renewLease on {snow:s}:lease:1: LEASE_LOST",
    });
    expect(await answering(-7).scripts.releaseLease({ sequence: "s", workerId: 1, token: "t", finalMs: null })).toBe(false);
  });

  test("a claim without an id gets a fresh one each time", async () => {
    const { scripts, calls } = answering([1, 1, 1]);
    await scripts.claimBlock({ counter, size: 1, epoch: "1", marker: "m" });
    await scripts.claimBlock({ counter, size: 1, epoch: "1", marker: "m" });
    const ids = calls.map(([, c]) => c.args[3]);
    expect(ids[0]).not.toBe(ids[1]);
  });
});
