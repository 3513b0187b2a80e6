import { expect, test } from "vitest";
import { ServerClock } from "./server-clock.js";

/** MongoDB's time: its clock runs with this worker's monotonic one, 1.8e12 ms apart. */
const EPOCH = 1_800_000_000_000;

/** A server that reads its clock when a request arrives, `rtt / 2` after it was sent, and answers as long again. */
function fake(mono: { now: number }, rtt: number) {
  let reads = 0;
  const read = async () => {
    reads++;
    await Promise.resolve();
    mono.now += rtt / 2;
    const at = EPOCH + Math.floor(mono.now); // localTime: whole ms
    mono.now += rtt / 2;
    return at;
  };
  return { read, reads: () => reads };
}

test("MongoDB's time is carried forward on the monotonic clock, never behind it, one reading a minute", async () => {
  const mono = { now: 1000.5 };
  const f = fake(mono, 20);
  const c = new ServerClock(f.read, { monotonic: () => mono.now });
  /** How far the estimate is ahead of MongoDB's time when asked. */
  const ahead = async () => {
    const estimate = c.now();
    const at = EPOCH + mono.now;
    return (await estimate) - at;
  };
  await c.now(); // the first reading
  // Dated to the request's sending: ahead by at most the round trip (and the ms localTime drops), never behind.
  expect(await ahead()).toBeGreaterThanOrEqual(0);
  expect(await ahead()).toBeLessThanOrEqual(20 + 2);
  expect(f.reads()).toBe(1);
  // Fifty seconds on: no round trip, the estimate moved with the monotonic clock (the server's too).
  mono.now += 50_000;
  const at50 = await ahead();
  expect(at50).toBeGreaterThanOrEqual(0);
  expect(at50).toBeLessThanOrEqual(22);
  expect(f.reads()).toBe(1);
  // Past the minute: read again in the background, the caller answered at once from the old reading.
  mono.now += 15_000;
  expect(await ahead()).toBeCloseTo(at50, 0);
  expect(f.reads()).toBe(2);
  await new Promise((r) => setTimeout(r, 0));
  const after = await ahead();
  expect(after).toBeGreaterThanOrEqual(0);
  expect(after).toBeLessThanOrEqual(22);
  expect(f.reads()).toBe(2);
});

test("a failed first reading throws; a failed refresh keeps the reading and is tried again a second later", async () => {
  const mono = { now: 0 };
  let fail = true;
  let reads = 0;
  const c = new ServerClock(
    async () => {
      reads++;
      if (fail) throw new Error("MongoDB down");
      return 5000;
    },
    { monotonic: () => mono.now, refreshMs: 10_000 },
  );
  await expect(c.now()).rejects.toThrow(/MongoDB down/);
  fail = false;
  expect(await c.now()).toBe(5001);
  fail = true;
  mono.now += 10_000;
  expect(await c.now()).toBe(15_001); // refresh failed in the background: the reading carries on
  await Promise.resolve();
  expect(await c.now()).toBe(15_001);
  expect(reads).toBe(3);
  mono.now += 1000;
  await c.now();
  expect(reads).toBe(4);
});
