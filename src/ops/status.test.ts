/**
 * The status model on its own (no services): rates are over complete seconds of the recent window,
 * headroom minutes follow them, the broker is asked at most once a second, refused names cannot
 * crowd real sequences out of the cap, and the rings stay bounded.
 */
import { expect, test } from "vitest";
import { Instrumentation } from "../core/events.js";
import type { CounterSnapshot } from "../issuing/sources/counter/counter.js";
import type { Forecast } from "../sequences/capacity.js";
import type { GroupPartition } from "../transport/kafka/index.js";
import type { SequenceForecast } from "./capacity-watch.js";
import { StatusModel } from "./status.js";

function rig(
  o: {
    maxSequences?: number;
    pool?: () => Promise<{ state: string; members: number; partitions: GroupPartition[] }>;
    forecasts?: () => SequenceForecast[];
  } = {},
) {
  const events = new Instrumentation();
  let now = 1_000_000;
  let counters: CounterSnapshot[] = [];
  let asked = 0;
  const model = new StatusModel({
    events,
    workerId: "w1",
    groupId: "g",
    requestTopic: "t",
    requestPartitions: () => 2,
    counters: () => counters,
    pool: () => {
      asked++;
      return (
        o.pool?.() ??
        Promise.resolve({
          state: "Stable",
          members: 1,
          partitions: [0, 1].map((partition) => ({
            partition,
            owner: { clientId: "idd-w1", host: "/127.0.0.1" },
            committed: "5",
            end: "7",
            lag: 2,
          })),
        })
      );
    },
    maxSequences: o.maxSequences ?? 10,
    clock: () => now,
    ...(o.forecasts && { forecasts: o.forecasts }),
  });
  const answered = (sequence: string, numbers: number, status = "OK") =>
    events.emit("dispenser.answered", { partition: 0, counts: [{ sequence, status, requests: 1, numbers }], deduped: 0 });
  return {
    events,
    model,
    answered,
    advance: (ms: number) => {
      now += ms;
    },
    setCounters: (c: CounterSnapshot[]) => {
      counters = c;
    },
    asked: () => asked,
  };
}

const counter = (sequence: string, headroom: bigint): CounterSnapshot => ({
  sequence,
  period: null,
  inMemory: 10n,
  headroom,
  ratePerSecond: 1,
  blockSize: 100,
  forecast: null,
});

test("rate: numbers of the complete seconds of the last 10, over the seconds served; headroom minutes at that rate", async () => {
  const r = rig();
  r.setCounters([counter("a", 60_000n)]);
  r.answered("a", 100);
  expect((await r.model.snapshot()).sequences[0]?.ratePerSecond).toBe(0); // no complete second yet
  for (let i = 0; i < 4; i++) {
    r.advance(1000);
    r.answered("a", 100);
  }
  r.advance(1000);
  let a = (await r.model.snapshot()).sequences[0];
  expect(a?.ratePerSecond).toBe(100); // 500 numbers over 5 complete seconds
  expect(a?.headroomMinutes).toBe(10); // 60,000 numbers at 100/s
  expect(a?.owner).toBe("w1"); // the broker's owner, by worker id (client id idd-w1)
  r.advance(20_000); // idle: the window empties
  a = (await r.model.snapshot()).sequences[0];
  expect(a?.ratePerSecond).toBe(0);
  expect(a?.headroomMinutes).toBeNull();
  expect(a?.requests).toBe(5);
});

test("the pool is asked at most once a second, however often the page polls; a broker failure is shown, not thrown", async () => {
  let fail = false;
  const r = rig({
    pool: () => (fail ? Promise.reject(new Error("broker down")) : Promise.resolve({ state: "Stable", members: 0, partitions: [] })),
  });
  await Promise.all([r.model.snapshot(), r.model.snapshot(), r.model.snapshot()]);
  r.advance(500);
  await r.model.snapshot();
  expect(r.asked()).toBe(1);
  fail = true;
  r.advance(600);
  expect((await r.model.snapshot()).pool).toEqual({ error: "broker down" });
  expect(r.asked()).toBe(2);
});

test("refused names go to the bounded errors ring, never into the per-sequence cap; grants are a bounded ring too", async () => {
  const r = rig({ maxSequences: 2 });
  for (let i = 0; i < 100; i++) r.answered(`unknown-${i}`, 0, "UNKNOWN_SEQUENCE");
  r.events.emit("worker.refused", { partition: 1, counts: [{ sequence: "x".repeat(500), code: "NO_REPLY_ADDRESS", requests: 3 }] });
  r.answered("a", 5);
  r.answered("b", 5);
  r.answered("c", 5); // past the cap: not tracked
  for (let i = 0; i < 500; i++) {
    r.events.emit("allocation.claimed", { sequence: "a", period: null, size: 10, first: BigInt(i * 10 + 1), last: BigInt(i * 10 + 10) });
  }
  const s = await r.model.snapshot();
  expect(s.sequences.map((q) => q.sequence)).toEqual(["a", "b"]);
  expect(s.errors.recent.length).toBeLessThanOrEqual(30);
  expect(s.errors.recent.at(-1)).toMatchObject({ code: "NO_REPLY_ADDRESS", requests: 3, partition: 1 });
  expect(s.errors.recent.at(-1)?.sequence).toHaveLength(81); // cut to 80 characters and an ellipsis
  expect(s.errors.totals).toEqual([
    { code: "UNKNOWN_SEQUENCE", requests: 100 },
    { code: "NO_REPLY_ADDRESS", requests: 3 },
  ]);
  expect(s.grants.length).toBeLessThanOrEqual(60);
  expect(s.grants.at(-1)).toMatchObject({ first: "4991", last: "5000", size: 10 });
  expect(JSON.parse(JSON.stringify(s))).toEqual(s); // what /status.json serves: no bigint left
});

test("breakers: closed until told otherwise, with the time they changed", async () => {
  const r = rig();
  r.advance(5000);
  r.events.emit("breaker.state", { what: "mongodb", open: true });
  const s = await r.model.snapshot();
  expect(s.breakers).toEqual([
    { dependency: "redis", open: false, since: null },
    { dependency: "mongodb", open: true, since: 1_005_000 },
  ]);
});

test("a sequence served without a counter (gapless) shows its forecast, with its period; a counter's is not shown twice", async () => {
  const f = (bound: Forecast["bound"], left: number): Forecast => ({
    bound,
    left,
    total: 9999,
    leftRatio: left / 9999,
    ratePerSecond: 5,
    exhaustionSeconds: left / 5,
    restartsFirst: false,
  });
  const r = rig({
    forecasts: () => [
      { sequence: "inv", period: "20261128", forecast: f("seq-width", 1000) },
      { sequence: "a", period: null, forecast: f("max-value", 7) },
    ],
  });
  r.setCounters([{ ...counter("a", 10n), forecast: f("max-value", 7) }]);
  r.answered("inv", 3);
  r.answered("a", 1);
  const s = await r.model.snapshot();
  const inv = s.sequences.find((q) => q.sequence === "inv");
  expect(inv?.period).toBe("20261128");
  expect(inv?.forecasts?.map((x) => [x.bound, x.left, x.text.left, x.text.runsOut])).toEqual([
    ["seq-width", 1000, "1,000 of 9,999 to seq-width (10.0%)", "in 3.3 min"],
  ]);
  expect(s.sequences.find((q) => q.sequence === "a")?.forecasts).toHaveLength(1);
});
