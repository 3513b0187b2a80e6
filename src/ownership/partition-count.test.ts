import { afterEach, expect, test, vi } from "vitest";
import { PartitionCount } from "./partition-count.js";

afterEach(() => {
  vi.restoreAllMocks();
});

test("the minimum refresh interval is on the monotonic clock: a wall clock stepped back an hour does not stop refreshes", async () => {
  let stepMs = 0;
  const realNow = Date.now;
  vi.spyOn(Date, "now").mockImplementation(() => realNow() + stepMs); // the process's wall clock, as libfaketime moves it
  let brokers = 6;
  let asked = 0;
  const count = new PartitionCount(6, {
    fetch: async () => {
      asked++;
      return brokers;
    },
    minRefreshMs: 20,
  });
  expect(await count.refresh()).toBe(6);
  expect(await count.refresh()).toBe(6); // within minRefreshMs: not asked again
  expect(asked).toBe(1);
  stepMs = -3_600_000; // NTP steps the clock back an hour
  brokers = 12; // the request topic grew
  await new Promise((r) => setTimeout(r, 40));
  expect(await count.refresh()).toBe(12);
  expect(asked).toBe(2);
});
