import { afterEach, expect, test, vi } from "vitest";
import { Instrumentation } from "../core/events.js";
import { Readiness } from "./readiness.js";

afterEach(() => {
  vi.restoreAllMocks();
});

test("how long a dependency is down is on the monotonic clock: a wall clock stepped an hour ahead is no hour's outage", async () => {
  let stepMs = 0;
  const realNow = Date.now;
  vi.spyOn(Date, "now").mockImplementation(() => realNow() + stepMs); // the process's wall clock, as libfaketime moves it
  const events = new Instrumentation();
  let up = false;
  const r = new Readiness({
    probes: [{ name: "redis", ping: async () => (up ? "PONG" : Promise.reject(new Error("refused"))) }],
    budgetMs: 30_000,
    timeoutMs: 500,
    events,
  });
  r.started();
  r.stop(); // probed once, by hand from here on
  events.emit("worker.consumer", { running: true });
  await r.probe();
  stepMs = 3_600_000; // NTP steps the clock an hour ahead
  const s = r.state();
  expect(s.dependencies[0]?.up).toBe(false);
  expect(s.dependencies[0]?.downForMs).toBeLessThan(5000);
  stepMs = -3_600_000; // and back, behind: no negative outage
  expect(r.state().dependencies[0]?.downForMs).toBeGreaterThanOrEqual(0);
  up = true;
  await r.probe();
  expect(r.state().dependencies[0]).toEqual({ name: "redis", up: true, downForMs: 0 });
});
