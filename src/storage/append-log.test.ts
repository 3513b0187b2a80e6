import { expect, test } from "vitest";
import { AppendLog } from "./append-log.js";

test("while appends fail, a full buffer is tried again once per flushMs, not once per push or failure", async () => {
  let attempts = 0;
  let up = false;
  const appended: number[] = [];
  const errors: number[] = [];
  const log = new AppendLog<number>(
    async (batch) => {
      attempts++;
      // Stands in for MongoDB down (a breaker that fails at once); it comes back after 100 attempts, so a spin ends.
      if (!up && attempts < 100) throw new Error("MongoDB unreachable");
      appended.push(...batch);
    },
    { flushMs: 50, maxBatch: 10, maxBuffered: 1000, onError: (_e, n) => errors.push(n) },
  );
  for (let i = 0; i < 35; i++) log.push(i);
  await new Promise((r) => setTimeout(r, 120));
  expect(attempts).toBeLessThanOrEqual(4); // the first, then one per 50 ms
  expect(log.buffered).toBe(35); // nothing lost
  up = true;
  await log.flush();
  expect(appended).toEqual(Array.from({ length: 35 }, (_, i) => i)); // in order, once each
  expect(log.buffered).toBe(0);
});

test("a wall clock stepped back an hour after a failed append does not hold the next appends for that hour", async () => {
  const realNow = Date.now;
  let step = 0;
  Date.now = () => realNow() + step;
  try {
    let fail = true;
    const appended: number[] = [];
    const log = new AppendLog<number>(
      async (batch) => {
        if (fail) throw new Error("MongoDB unreachable");
        appended.push(...batch);
      },
      { flushMs: 50, maxBatch: 10, maxBuffered: 1000, onError: () => {} },
    );
    for (let i = 0; i < 10; i++) log.push(i); // a full batch: appended at once, and fails
    await new Promise((r) => setTimeout(r, 10));
    fail = false;
    step = -3_600_000; // NTP stepped the clock back an hour
    await new Promise((r) => setTimeout(r, 100)); // the retry after flushMs: appended
    for (let i = 10; i < 25; i++) log.push(i); // the next records: within flushMs, not an hour
    await new Promise((r) => setTimeout(r, 200));
    expect(appended).toEqual(Array.from({ length: 25 }, (_, i) => i));
  } finally {
    Date.now = realNow;
  }
});
