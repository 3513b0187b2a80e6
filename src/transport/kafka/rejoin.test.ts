/** Rejoining a group after a member crashed for good: the backoff, and stopping when closed. No broker, no real timers. */
import { expect, test } from "vitest";
import { REJOIN_FIRST_WAIT_MS, REJOIN_MAX_WAIT_MS, rejoinWithBackoff } from "./rejoin.js";

test("waits 1 s, then doubles after each failure up to 30 s, until a join succeeds", async () => {
  const waits: number[] = [];
  const failures: { attempt: number; retryInMs: number; err: string }[] = [];
  let joins = 0;
  await rejoinWithBackoff({
    isClosed: () => false,
    sleep: async (ms) => {
      waits.push(ms);
    },
    join: async () => {
      if (++joins < 8) throw new Error(`broker down (${joins})`);
    },
    failed: async (err, attempt, retryInMs) => {
      failures.push({ attempt, retryInMs, err: (err as Error).message });
    },
  });
  expect([REJOIN_FIRST_WAIT_MS, REJOIN_MAX_WAIT_MS]).toEqual([1000, 30_000]);
  expect(waits).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
  expect(joins).toBe(8);
  expect(failures.map((f) => f.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  expect(failures.map((f) => f.retryInMs)).toEqual(waits.slice(1)); // each log line says the wait that follows
  expect(failures[0]?.err).toBe("broker down (1)");
});

test("closing stops it: during a wait no join follows, and closed before it starts it neither waits nor joins", async () => {
  let closed = false;
  let joins = 0;
  const waits: number[] = [];
  await rejoinWithBackoff({
    isClosed: () => closed,
    sleep: async (ms) => {
      waits.push(ms);
      if (waits.length === 3) closed = true;
    },
    join: async () => {
      joins++;
      throw new Error("broker down");
    },
    failed: async () => {},
  });
  expect(waits).toEqual([1000, 2000, 4000]);
  expect(joins).toBe(2);

  const before = { waits: waits.length, joins };
  await rejoinWithBackoff({
    isClosed: () => true,
    sleep: async (ms) => void waits.push(ms),
    join: async () => void joins++,
    failed: async () => {},
  });
  expect({ waits: waits.length, joins }).toEqual(before);
});
