import { afterEach, expect, test, vi } from "vitest";
import { isIddError } from "../core/errors.js";
import { InFlight } from "./in-flight.js";

afterEach(() => {
  vi.useRealTimers();
});

/** An operation that runs until `done()`; `started` tells whether it began. */
function held() {
  let done = () => {};
  const op = { started: false, done: () => done() };
  const fn = () =>
    new Promise<string>((resolve) => {
      op.started = true;
      done = () => resolve("ok");
    });
  return { op, fn };
}

const tick = () => new Promise<void>((r) => setImmediate(r));

test("past its bound an operation waits, and starts when one in flight ends", async () => {
  const gate = new InFlight({ limit: 2, maxWaitMs: 10_000, what: "MongoDB" });
  const ops = [held(), held(), held()];
  const runs = ops.map((o) => gate.run("normal", o.fn));
  await tick();
  expect(ops.map((o) => o.op.started)).toEqual([true, true, false]);
  expect(gate.stats).toMatchObject({ inFlight: 2, waiting: 1, queued: 1 });
  ops[0]?.op.done();
  await tick();
  expect(ops[2]?.op.started).toBe(true);
  for (const o of ops) o.op.done();
  expect(await Promise.all(runs)).toEqual(["ok", "ok", "ok"]);
  expect(gate.stats).toMatchObject({ inFlight: 0, waiting: 0 });
});

test("critical writes go ahead of waiting reads", async () => {
  const gate = new InFlight({ limit: 1, maxWaitMs: 10_000, what: "MongoDB" });
  const first = held();
  const read = held();
  const write = held();
  const runs = [gate.run("normal", first.fn), gate.run("normal", read.fn), gate.run("critical", write.fn)];
  await tick();
  first.op.done();
  await tick();
  expect([read.op.started, write.op.started]).toEqual([false, true]);
  write.op.done();
  await tick();
  read.op.done();
  await Promise.all(runs);
});

test("samples are shed at once when no slot is free, and counted", async () => {
  const gate = new InFlight({ limit: 1, maxWaitMs: 10_000, what: "MongoDB" });
  const first = held();
  const run = gate.run("critical", first.fn);
  await tick();
  const shed = await gate.run("sheddable", async () => "appended").catch((e: unknown) => e);
  expect(isIddError(shed, "UNAVAILABLE")).toBe(true);
  expect((shed as Error).message).toMatch(/MongoDB busy .*shed/);
  expect(gate.stats.shed).toBe(1);
  first.op.done();
  await run;
  expect(await gate.run("sheddable", async () => "appended")).toBe("appended");
});

test("a wait past maxWaitMs is refused UNAVAILABLE without running, and counted", async () => {
  vi.useFakeTimers();
  const gate = new InFlight({ limit: 1, maxWaitMs: 5000, what: "MongoDB" });
  const first = held();
  const run = gate.run("normal", first.fn);
  let ran = false;
  const waiting = gate
    .run("critical", async () => {
      ran = true;
    })
    .catch((e: unknown) => e);
  await vi.advanceTimersByTimeAsync(4999);
  expect(gate.stats.waiting).toBe(1);
  await vi.advanceTimersByTimeAsync(1);
  const e = await waiting;
  expect(isIddError(e, "UNAVAILABLE")).toBe(true);
  expect((e as Error).message).toMatch(/no slot free within 5000 ms/);
  expect(gate.stats).toMatchObject({ waiting: 0, timedOut: 1, inFlight: 1 });
  first.op.done();
  await run;
  expect(ran).toBe(false);
  expect(gate.stats.inFlight).toBe(0);
});

test("a grown bound admits waiters; a shrunk one lets those in flight finish", async () => {
  const gate = new InFlight({ limit: 1, maxWaitMs: 10_000, what: "MongoDB" });
  const ops = [held(), held(), held()];
  const runs = ops.map((o) => gate.run("normal", o.fn));
  await tick();
  gate.resize(3);
  await tick();
  expect(ops.map((o) => o.op.started)).toEqual([true, true, true]);
  gate.resize(1);
  const later = held();
  const next = gate.run("normal", later.fn);
  ops[0]?.op.done();
  ops[1]?.op.done();
  await tick();
  expect(later.op.started).toBe(false); // still 1 in flight, the bound
  ops[2]?.op.done();
  await tick();
  expect(later.op.started).toBe(true);
  later.op.done();
  await Promise.all([...runs, next]);
  expect(() => gate.resize(0)).toThrow(RangeError);
});

test("a failed operation frees its slot", async () => {
  const gate = new InFlight({ limit: 1, maxWaitMs: 10_000, what: "MongoDB" });
  await expect(gate.run("normal", () => Promise.reject(new Error("refused")))).rejects.toThrow("refused");
  expect(await gate.run("normal", async () => 1)).toBe(1);
});
