import { expect, test } from "vitest";
import { SentinelRedis, sentinelRetryMessage } from "./sentinel-redis.js";

const IOREDIS = "All sentinels are unreachable. Retrying from scratch after 10ms. Last error: Connection is closed.";

test("ioredis's retry round under Sentinel is said in idd's words, with what the client does next", () => {
  expect(sentinelRetryMessage(IOREDIS)).toBe(
    "no Redis primary reachable through the Sentinels yet (a failover may be under way); connecting again in 10 ms (last: Connection is closed.)",
  );
  expect(sentinelRetryMessage("All sentinels are unreachable and retry is disabled.")).toBeUndefined();
  expect(sentinelRetryMessage("WRONGPASS invalid username-password pair")).toBeUndefined();
});

test("the client's error listeners get idd's message, ioredis's error as its cause; other errors unchanged", () => {
  const r = new SentinelRedis({ sentinels: [{ host: "127.0.0.1", port: 1 }], name: "idd", lazyConnect: true });
  const got: Error[] = [];
  r.on("error", (e: Error) => got.push(e));
  r.emit("error", new Error(IOREDIS));
  r.emit("error", new Error("ECONNREFUSED"));
  expect(got.map((e) => e.message)).toEqual([sentinelRetryMessage(IOREDIS), "ECONNREFUSED"]);
  expect(((got[0] as Error).cause as Error).message).toBe(IOREDIS);
  r.disconnect();
});
