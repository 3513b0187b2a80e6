import { pino } from "pino";
import { expect, test } from "vitest";
import { Instrumentation } from "../../../core/events.js";
import { GaplessSweep, type GaplessSweepDeps } from "./gapless-sweep.js";

test("a sweep in flight when partition 0 goes elsewhere does not report this worker as counting", async () => {
  let release: () => void = () => {};
  const counted = new Promise<void>((r) => {
    release = r;
  });
  const store = {
    serverTime: async () => Date.now(),
    expiredGapless: async () => [],
    gaplessCounts: async () => {
      await counted;
      return [];
    },
  } as unknown as GaplessSweepDeps["store"];
  const events = new Instrumentation();
  const seen: (boolean | undefined)[] = [];
  events.on("gapless.counts", (e) => seen.push(e.counting ?? true));
  const sweep = new GaplessSweep({ store, worker: "w", everyMs: 60_000, clock: Date.now, events, logger: pino({ level: "silent" }) });
  const running = sweep.run(); // leads by default, until the first assignment says otherwise
  sweep.lead(false);
  release();
  await running;
  expect(seen).toEqual([false]);
  // Leading again: it sweeps at once and reports its counts.
  sweep.lead(true);
  await sweep.run();
  expect(seen).toEqual([false, true]);
});
