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
