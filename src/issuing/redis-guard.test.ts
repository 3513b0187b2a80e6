import { pino } from "pino";
import { expect, test } from "vitest";
import { RedisGuard } from "./redis-guard.js";

test("Redis back after a wall clock step: the guard probes again after its second, whatever the wall clock says", async () => {
  const realNow = Date.now;
  let step = 0;
  Date.now = () => realNow() + step; // before the guard exists: its breaker may have kept a reference
  try {
    const guard = new RedisGuard({ redisTimeoutMs: 100, log: pino({ level: "silent" }) });
    expect(await guard.call(0, () => Promise.reject(new Error("connection reset")))).toBeUndefined(); // opens
    step = -3_600_000; // NTP stepped the clock back an hour
    await new Promise((r) => setTimeout(r, 1100)); // past the guard's 1 s retry, really
    let called = 0;
    const answer = await guard.call(0, async () => {
      called++;
      return "OK";
    });
    expect(called).toBe(1);
    expect(answer).toBe("OK");
  } finally {
    Date.now = realNow;
  }
});
