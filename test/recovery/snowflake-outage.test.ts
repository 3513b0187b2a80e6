/**
 * A Redis that hangs (a private redis-server, SIGSTOPped: connections stay open, nothing answers),
 * as a worker cut from Redis by a silent link sees it (issue #28's `redis-cut`): snowflake requests
 * keep the dispenser's Redis policy (G3, design §5.5) — a call that times out marks Redis
 * unreachable, and for a second no batch waits for Redis again. Before, a snowflake take that needed
 * Redis (its worker-id lease renewed or acquired again) went past that policy: every batch waited the
 * full command timeout, and the partition's other requests queued behind it until clients timed out.
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { afterAll, expect, inject, test } from "vitest";
import { defineSequence } from "../../src/sequences/definition.js";
import { request as ask, beat, DispenserRig } from "../support/dispenser-rig.js";
import { startPrivateRedis } from "../support/private-redis.js";
import { sleep } from "../support/wait.js";

const TIMEOUT_MS = 400;
const server = await startPrivateRedis();
const rig = new DispenserRig({ ...inject("services"), redisUrl: server.url }, "snowout", {
  commandTimeout: TIMEOUT_MS,
  maxRetriesPerRequest: 1,
  enableOfflineQueue: false,
});
afterAll(async () => {
  server.resume();
  await rig.close();
  await server.stop();
});

test("Redis hung: snowflake requests fail fast once Redis is known unreachable, not each after a command timeout", async () => {
  const def = defineSequence({ name: `snow-${randomUUID()}`, kind: "snowflake" }, new Date());
  await rig.store.createSequence(def);
  const w = rig.dispenser({ partitions: [0], snowflakes: true });
  const [first] = await w.d.answer(0, [ask(def.name)], beat);
  expect(first?.status).toBe("OK");

  server.pause();
  // Past the lease's validity (TTL 10 s less its margin): every take then needs Redis.
  const batches: { at: number; ms: number; code: string | undefined }[] = [];
  const t0 = performance.now();
  while (performance.now() - t0 < 14_000) {
    const at = performance.now();
    const [r] = await w.d.answer(0, [ask(def.name)], beat);
    batches.push({ at: at - t0, ms: performance.now() - at, code: r?.error?.code });
    await sleep(50);
  }
  server.resume();

  const failed = batches.filter((b) => b.code !== undefined);
  expect(failed.length).toBeGreaterThan(3);
  expect(new Set(failed.map((b) => b.code))).toEqual(new Set(["UNAVAILABLE"]));
  // A batch waits for Redis (the whole command timeout) at most once per probe, one a second: the
  // rest answer at once. Before, every one waited.
  const waited = failed.filter((b) => b.ms >= TIMEOUT_MS * 0.9);
  const span = (failed.at(-1)?.at ?? 0) - (failed[0]?.at ?? 0);
  expect(waited.length, JSON.stringify(waited)).toBeLessThanOrEqual(Math.ceil(span / 1000) + 3);
  expect(failed.length - waited.length, JSON.stringify(failed)).toBeGreaterThan(waited.length);
}, 60_000);
