import pino from "pino";
import { expect, test } from "vitest";
import { Instrumentation } from "../core/events.js";
import { ReplyPipeline } from "./pipeline.js";

/** A delivery the test settles by hand. */
function sending() {
  let resolve = () => {};
  let reject = (_e: Error) => {};
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function rig() {
  const events = new Instrumentation();
  const rewound: { partition: number; offset: string }[] = [];
  events.on("worker.rewound", (e) => rewound.push(e));
  const pipeline = new ReplyPipeline(pino({ level: "silent" }), events);
  const calls: string[] = [];
  const ctx = { commitBehind: (o: string) => calls.push(`commit ${o}`), rewind: (o: string) => calls.push(`rewind ${o}`) };
  return { pipeline, calls, ctx, rewound };
}

test("steps commit in offset order, each once its replies and every earlier step's are acknowledged", async () => {
  const { pipeline, calls, ctx } = rig();
  const lane = pipeline.lane(0);
  const a = sending();
  const b = sending();
  const done: string[] = [];
  const outA = pipeline.add(lane, ctx, { first: "0", next: "10", sending: [a.promise], done: () => done.push("a") });
  const outB = pipeline.add(lane, ctx, { first: "10", next: "20", sending: [b.promise], done: () => done.push("b") });
  expect(lane.out).toBe(2);
  b.resolve(); // the later step is acknowledged first: it waits for the earlier one
  await new Promise((r) => setTimeout(r, 10));
  expect(calls).toEqual([]);
  a.resolve();
  await Promise.all([outA, outB]);
  expect(calls).toEqual(["commit 10", "commit 20"]);
  expect(done).toEqual(["a", "b"]);
  expect(lane.doneBefore).toBe(20);
  expect(lane.out).toBe(0);
});

test("a failed delivery rewinds the partition to its step, commits nothing after it, and keeps what went out", async () => {
  const { pipeline, calls, ctx, rewound } = rig();
  const lane = pipeline.lane(3);
  const a = sending();
  const b = sending();
  const c = sending();
  pipeline.add(lane, ctx, { first: "0", next: "10", sending: [a.promise], done: () => {} });
  pipeline.add(lane, ctx, { first: "10", next: "20", sending: [b.promise], done: () => {} });
  const last = pipeline.add(lane, ctx, { first: "20", next: "30", sending: [c.promise], done: () => {} });
  lane.delivered.add("25"); // delivered by the third step before the second one's failure is known
  a.resolve();
  b.reject(new Error("broker gone"));
  c.resolve();
  await last;
  expect(calls).toEqual(["commit 10", "rewind 10"]);
  expect(rewound).toEqual([{ partition: 3, offset: "10" }]);
  const again = pipeline.lane(3);
  expect(again).not.toBe(lane); // the re-read starts afresh from what is committed…
  expect(again.doneBefore).toBe(10);
  expect(again.delivered.has("25")).toBe(true); // …and does not send again what went out
  expect(again.out).toBe(0);
});

test("a partition forgotten while its steps are out: they commit nothing; settled waits for them", async () => {
  const { pipeline, calls, ctx } = rig();
  const lane = pipeline.lane(1);
  const a = sending();
  pipeline.add(lane, ctx, { first: "0", next: "5", sending: [a.promise], done: () => {} });
  let settled = false;
  const waiting = pipeline.settled().then(() => {
    settled = true;
  });
  await new Promise((r) => setTimeout(r, 10));
  expect(settled).toBe(false);
  pipeline.forget(1);
  a.resolve();
  await waiting;
  await lane.tail;
  expect(calls).toEqual([]);
});
