import { expect, test } from "vitest";
import { Breaker, stalled } from "./breaker.js";
import { isIddError } from "./errors.js";

const down = new Error("connection refused");
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => "ok",
    (e: unknown) => (isIddError(e) ? e.code : String(e)),
  );

test("open: calls fail fast; one probe after retryMs; a probe that hangs stops holding the others back after probeTimeoutMs", async () => {
  let now = 0;
  const b = new Breaker({ what: "X", retryMs: 1000, probeTimeoutMs: 5000, isFailure: (e) => e === down, clock: () => now });
  expect(await codeOf(b.run(() => Promise.reject(down)))).toBe("UNAVAILABLE");
  let calls = 0;
  const ok = () => {
    calls++;
    return Promise.resolve(1);
  };
  expect(await codeOf(b.run(ok))).toBe("UNAVAILABLE"); // before retryMs: not even tried
  expect(calls).toBe(0);
  now = 1000;
  void b.run(() => new Promise(() => {})); // the probe hangs (half-open connection)
  now = 3000;
  expect(await codeOf(b.run(ok))).toBe("UNAVAILABLE"); // the hung probe is still the probe
  now = 6000;
  expect(await codeOf(b.run(ok))).toBe("ok"); // past probeTimeoutMs: a new probe, which closes the breaker
  expect(b.open).toBe(false);
  expect(await codeOf(b.run(ok))).toBe("ok");
});

test("a failure that took longer than stallMs is this process stalling, not the service: the breaker stays closed", async () => {
  let now = 0;
  const b = new Breaker({ what: "X", retryMs: 1000, stallMs: 4000, isFailure: (e) => e === down, clock: () => now });
  const timedOutAfterAPause = () => {
    now += 10_000; // stopped for 10 s; the command's timer fired on waking
    return Promise.reject(down);
  };
  const e = await b.run(timedOutAfterAPause).catch((x: unknown) => x);
  expect(isIddError(e, "UNAVAILABLE") && stalled(e)).toBe(true);
  expect(b.open).toBe(false);
  expect(await codeOf(b.run(() => Promise.resolve(1)))).toBe("ok"); // asked again at once
  const quick = await b.run(() => Promise.reject(down)).catch((x: unknown) => x);
  expect(stalled(quick)).toBe(false); // a failure in time is the service's
  expect(b.open).toBe(true);
});

test("by default the breaker runs on the monotonic clock: a wall clock stepped back an hour while it is open does not keep it open", async () => {
  const realNow = Date.now;
  let step = 0;
  Date.now = () => realNow() + step; // before the breaker exists: it may have kept a reference
  try {
    const b = new Breaker({ what: "X", retryMs: 50, isFailure: (e) => e === down });
    expect(await codeOf(b.run(() => Promise.reject(down)))).toBe("UNAVAILABLE");
    step = -3_600_000; // NTP stepped the clock back an hour
    await new Promise((r) => setTimeout(r, 80)); // past retryMs, really
    expect(await codeOf(b.run(() => Promise.resolve(1)))).toBe("ok");
    expect(b.open).toBe(false);
  } finally {
    Date.now = realNow;
  }
});

test("on a monotonic clock (fractions of a millisecond), the open breaker says how long in whole milliseconds", async () => {
  let now = 1000.25;
  const b = new Breaker({ what: "MongoDB", retryMs: 1000, probeTimeoutMs: 5000, isFailure: (e) => e === down, clock: () => now });
  await codeOf(b.run(() => Promise.reject(down)));
  now = 1530.558;
  await expect(b.run(() => Promise.resolve(1))).rejects.toThrow(/^MongoDB unreachable for 530 ms; retrying$/);
});
