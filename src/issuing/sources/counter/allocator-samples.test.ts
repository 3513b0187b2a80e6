/**
 * The allocator's samples on their own (no services, no counter): windows of other sources
 * (gapless counters) are closed with the counters' and appended to `samples` with theirs.
 */
import { expect, test } from "vitest";
import type { RedisClient } from "../../../redis/client-type.js";
import type { Sample } from "../../../storage/samples.js";
import type { Store } from "../../../storage/store.js";
import { Allocator } from "./allocator.js";
import type { AllocationConfig } from "./counter.js";

test("another source's windows are closed each sample and appended with the worker and the time", async () => {
  let now = 1_000_000;
  const appended: Sample[] = [];
  const store = {
    appendSamples: async (b: Sample[]) => void appended.push(...b),
    appendGrants: async () => {},
    appendReleases: async () => {},
  } as unknown as Store;
  const allocator = new Allocator({
    redis: { defineCommand: () => {} } as unknown as RedisClient,
    store,
    worker: "w1",
    config: {} as AllocationConfig,
    clock: () => now,
    flushMs: 60_000,
    sampleMs: 60_000,
    onLogError: () => {},
  });
  const asked: number[] = [];
  allocator.sampleAlso((ms) => {
    asked.push(ms);
    return asked.length === 1 ? [{ sequence: "inv", period: null, issued: 7, windowMs: ms }] : [];
  });
  now += 4000;
  allocator.sample();
  now += 1000;
  await allocator.close(); // samples once more, then flushes
  expect(asked).toEqual([4000, 1000]);
  expect(appended).toEqual([{ sequence: "inv", period: null, issued: 7, windowMs: 4000, worker: "w1", at: new Date(1_004_000) }]);
});
