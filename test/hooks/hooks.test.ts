/**
 * Issuance hooks around the dispenser, on real Redis and MongoDB: hooks that throw, hang, or try to
 * change the numbers cannot change an answer; a refusal answers HOOK_REFUSED without spending a
 * number and never refuses a retry; the built-in rate hook counts what was issued;
 * modules IDD_HOOKS names are loaded, or refused with HOOK_INVALID.
 */
import { randomUUID } from "node:crypto";
import pino from "pino";
import { afterAll, expect, inject, test } from "vitest";
import { isIddError } from "../../src/core/errors.js";
import type { RateHook } from "../../src/hooks/builtin/rate.js";
import type { HookContext, IssuanceHook } from "../../src/hooks/hook.js";
import { Hooks } from "../../src/hooks/hooks.js";
import { loadHooks } from "../../src/hooks/load.js";
import { request as ask, beat, DispenserRig, numbersOf as serials } from "../support/dispenser-rig.js";

const rig = new DispenserRig(inject("services"), "hooks");
const store = rig.store;
const logger = pino({ level: "silent" });
const ctx: HookContext = { worker: "hooks-test", logger, store, env: { IDD_DENY_SEQUENCES: "closed-a,closed-b" } };

function dispenser(hooks: IssuanceHook[], o: { timeoutMs?: number; maxPending?: number } = {}) {
  const runner = new Hooks(hooks, { timeoutMs: o.timeoutMs ?? 100, maxPending: o.maxPending ?? 1000, logger });
  return { d: rig.dispenser({ hooks: runner, autoCreate: true, topic: `hooks-${randomUUID()}` }).d, runner };
}
const request = (sequence: string, count = 1, requestId: string = randomUUID()) => ask(sequence, count, requestId);
const consecutive = (n: number) => Array.from({ length: n }, (_, i) => BigInt(i + 1));
afterAll(() => rig.close());

test("hooks that throw are ignored and counted; every request is answered as without them", async () => {
  const boom = () => {
    throw new Error("hook bug");
  };
  const { d, runner } = dispenser([
    { name: "throws", before: boom, after: boom, onError: async () => Promise.reject(new Error("async bug")) },
  ]);
  const seq = `throw-${randomUUID()}`;
  const replies = await d.answer(0, [request(seq, 2), request(seq, 3), request("bad name!", 1)], beat);
  expect(replies.map((r) => r.status)).toEqual(["OK", "OK", "ERROR"]);
  expect(serials(replies)).toEqual(consecutive(5));
  await runner.close();
  expect(runner.stats.failures).toBeGreaterThanOrEqual(4); // 2 before, 2 after, 1 onError
});

test("a before that hangs costs a step its time bound once, not per request; observers that hang are cut off and shed load", async () => {
  const never = new Promise<never>(() => {});
  const { d, runner } = dispenser([{ name: "hangs", before: () => never, after: () => never }], { timeoutMs: 200, maxPending: 5 });
  const seq = `hang-${randomUUID()}`;
  const t0 = performance.now();
  const replies = await d.answer(
    0,
    Array.from({ length: 50 }, () => request(seq)),
    beat,
  );
  const ms = performance.now() - t0;
  expect(serials(replies)).toEqual(consecutive(50));
  expect(ms).toBeGreaterThanOrEqual(190);
  expect(ms).toBeLessThan(8000); // 50 requests × 200 ms would be 10 s
  expect(runner.stats.timeouts).toBeGreaterThanOrEqual(50);
  expect(runner.stats.dropped).toBe(45); // 5 observer calls in flight at most
  await runner.close(); // waits for the 5, each cut off at its bound
  expect(runner.stats.timeouts).toBe(55);
});

test("a hook that tries to change the numbers cannot: events are frozen copies", async () => {
  const seen: string[] = [];
  const tamper: IssuanceHook = {
    name: "tamper",
    before(r) {
      (r as { count: number }).count = 1000;
    },
    after(e) {
      try {
        (e.ranges[0] as { first: bigint }).first = 0n;
      } catch (x) {
        seen.push((x as Error).name);
      }
      (e.formatted as string[]).push("forged"); // throws: the hooks runner counts it
    },
  };
  const { d, runner } = dispenser([tamper]);
  const seq = `tamper-${randomUUID()}`;
  const replies = await d.answer(0, [request(seq, 2), request(seq, 1)], beat);
  expect(replies.map((r) => r.ranges)).toEqual([[{ first: 1n, last: 2n }], [{ first: 3n, last: 3n }]]);
  expect(replies.map((r) => r.formatted)).toEqual([[], []]);
  await runner.close();
  expect(seen).toEqual(["TypeError", "TypeError"]);
  expect(runner.stats.failures).toBe(4); // before ×2 (frozen request), after ×2 (frozen formatted)
});

test("a refusal answers HOOK_REFUSED before any number is spent, and a retry of an earlier answer is never refused", async () => {
  const [deny] = await loadHooks("./src/hooks/examples/deny-list.ts", ctx);
  let closed = false;
  const gate: IssuanceHook = {
    name: "gate",
    before: (r) => (closed && r.sequence.startsWith("gate-") ? { refuse: "gate closed" } : undefined),
  };
  const { d, runner } = dispenser([deny as IssuanceHook, gate]);
  const seq = `gate-${randomUUID()}`;
  const first = await d.answer(0, [request(seq, 1, "kept"), request("closed-a", 1)], beat);
  expect(first.map((r) => r.error?.code ?? "OK")).toEqual(["OK", "HOOK_REFUSED"]);
  expect(first[1]?.error?.message).toBe('sequence "closed-a" is closed for issuance');
  closed = true;
  const second = await d.answer(0, [request(seq, 1), request(seq, 1, "kept")], beat);
  expect(second.map((r) => r.error?.code ?? "OK")).toEqual(["HOOK_REFUSED", "OK"]);
  expect(second[1]?.ranges).toEqual(first[0]?.ranges);
  closed = false;
  expect(serials(await d.answer(0, [request(seq, 1)], beat))).toEqual([2n]); // nothing was spent on the refusal
  expect(runner.stats.refused).toBe(2);
});

test("the built-in rate hook counts per sequence", async () => {
  const hooks = await loadHooks(" idd:rate ", ctx, { rateLogMs: 0 });
  expect(hooks.map((h) => h.name)).toEqual(["idd:rate"]);
  const { d, runner } = dispenser(hooks);
  const seq = `hist-${randomUUID()}`;
  await d.answer(0, [request(seq, 2, "h1"), request(seq, 3, "h2")], beat);
  await d.answer(0, [request(seq, 2, "h1")], beat); // a retry: recorded as deduped
  expect((hooks[0] as RateHook).rates().find((r) => r.sequence === seq)?.numbersPerSecond).toBeGreaterThan(0);
  await runner.close();
});

test("IDD_HOOKS entries that are not hooks fail with HOOK_INVALID and say why", async () => {
  const code = (p: Promise<unknown>) =>
    p.then(
      () => "loaded",
      (e: unknown) => (isIddError(e) ? `${e.code}: ${e.message}` : String(e)),
    );
  expect(await code(loadHooks("idd:nope", ctx))).toMatch(/^HOOK_INVALID: no built-in hook "idd:nope"/);
  expect(await code(loadHooks("idd:history", ctx))).toMatch(/^HOOK_INVALID: the built-in hook "idd:history" is gone: .*--audit/);
  expect(await code(loadHooks("./no/such/hook.js", ctx))).toMatch(/^HOOK_INVALID: hook module ".\/no\/such\/hook.js" could not be loaded/);
  expect(await code(loadHooks("./src/hooks/hook.ts", ctx))).toMatch(/^HOOK_INVALID: .* must export by default a hook/);
});
