/**
 * The closed-loop section of `npm run bench` (`--only closed-loop`): latency with a fixed number of
 * callers, each waiting for its answer before asking again, as ratios measured in one run.
 *
 *  1. baseline: one Redis Lua call per number (the simplest design: HINCRBY within max, no blocks), 100 callers;
 *  2. idd allocation in process: numbers from Redis blocks held in memory;
 *  3. the cost of the strict grant log: in process, blocks of 100, relaxed vs strict;
 *  4. idd end to end over Kafka: single-number requests from concurrent clients against worker
 *     processes, dedupe on and off measured alternately (its cost), then batches of 100.
 */
import { randomUUID } from "node:crypto";
import { IdClient } from "../../src/client/id-client.js";
import { DEFAULTS } from "../../src/config/config.js";
import type { ServiceSettings } from "../../src/config/services.js";
import { Allocator } from "../../src/issuing/sources/counter/allocator.js";
import type { AllocationConfig } from "../../src/issuing/sources/counter/counter.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { scriptClient } from "../support/redis.js";
import { serviceEnv, startWorker, stopWorker } from "../support/workers.js";

export interface ClosedLoopOptions {
  /** Seconds per measurement. */
  seconds: number;
  /** Worker processes per pool. */
  workers: number;
  /** Concurrent callers end to end. */
  loops: number;
}

export async function closedLoop(services: ServiceSettings, say: (line: string) => void, o: ClosedLoopOptions): Promise<void> {
  const { seconds } = o;
  async function timed(
    label: string,
    callers: number,
    op: () => Promise<number>,
  ): Promise<{ perSecond: number; p50: number; p99: number }> {
    const latencies: number[] = [];
    let numbers = 0;
    const until = performance.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: callers }, async () => {
        while (performance.now() < until) {
          const t = performance.now();
          const got = await op(); // not `numbers += await op()`: that reads numbers before the await
          numbers += got;
          latencies.push(performance.now() - t);
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    const r = {
      perSecond: numbers / seconds,
      p50: latencies[Math.floor(latencies.length / 2)] ?? 0,
      p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0,
    };
    say(`${label.padEnd(44)} ${r.perSecond.toFixed(0).padStart(10)} numbers/s   p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms`);
    return r;
  }

  const run = randomUUID().slice(0, 8);
  const redis = scriptClient(services.redisUrl);
  const store = new Store(services.mongodbUrl);
  say(`closed loop, ${seconds} s per measurement`);

  // 1. The baseline: one Lua round trip per number.
  const baseKey = `{bench:${run}}:base`;
  await redis.hset(baseKey, "cur", 0, "max", Number.MAX_SAFE_INTEGER);
  const perNumber = `local c = redis.call("HINCRBY", KEYS[1], "cur", 1) if c > tonumber(redis.call("HGET", KEYS[1], "max")) then return -3 end return c`;
  const baseline = await timed("baseline: Redis Lua per number, 100 callers", 100, async () => {
    await redis.eval(perNumber, 1, baseKey);
    return 1;
  });

  // 2. idd's allocator in process; 3. the same with small blocks, relaxed and strict.
  async function inProcess(label: string, config: AllocationConfig, grantLog: "relaxed" | "strict") {
    const def = defineSequence({ name: `bench-${grantLog}-${randomUUID()}`, grantLog }, new Date());
    await store.createSequence(def);
    const allocator = new Allocator({
      redis,
      store,
      worker: "bench",
      config,
      clock: Date.now,
      flushMs: 200,
      sampleMs: 10_000,
      onLogError: () => {},
    });
    const counter = allocator.counter(def, null, Date.now() * 1000);
    const r = await timed(label, 1, async () => {
      for (let i = 0; i < 1000; i++) await counter.take(1);
      return 1000;
    });
    await allocator.close();
    return r;
  }
  const inProc = await inProcess("idd allocation in process, take(1)", DEFAULTS, "relaxed");
  const small = { ...DEFAULTS, minBlock: 100, maxBlock: 100, initialBlock: 100 };
  const relaxed100 = await inProcess("  blocks of 100, relaxed grant log", small, "relaxed");
  const strict100 = await inProcess("  blocks of 100, strict grant log", small, "strict");

  // 4. End to end over Kafka: two pools side by side, dedupe on (the default) and off, each with its
  // own request topic and clients; measured alternately (A B B A …) so that warm-up and machine noise
  // fall on both alike.
  const poolEnv = (name: string, extra: NodeJS.ProcessEnv = {}) => ({
    ...serviceEnv(services),
    IDD_REQUEST_TOPIC: `bench.${run}.${name}.requests`,
    IDD_DLQ_TOPIC: `bench.${run}.${name}.dlq`,
    IDD_GROUP_ID: `bench-${run}-${name}`,
    IDD_AUTO_CREATE_SEQUENCES: "true",
    LOG_LEVEL: "warn",
    ...extra,
  });
  const pools = { on: poolEnv("dedupe"), off: poolEnv("nodedupe", { IDD_DEDUPE_WINDOW_MS: "0" }) };
  const workers = Object.entries(pools).flatMap(([name, env]) =>
    Array.from({ length: o.workers }, (_, i) => startWorker(`bench-${name}${i}`, env)),
  );
  await Promise.all(workers.map((w) => w.assigned));
  const clientsOf = (env: NodeJS.ProcessEnv) =>
    Promise.all(
      Array.from({ length: 4 }, () =>
        IdClient.connect({ brokers: services.kafkaBrokers, requestTopic: env.IDD_REQUEST_TOPIC, timeoutMs: 30_000 }),
      ),
    );
  const clients = { on: await clientsOf(pools.on), off: await clientsOf(pools.off) };
  const { loops } = o;
  const sequences = Array.from({ length: 8 }, (_, i) => `bench-${run}-${i}`);
  let n = 0;
  const e2e = (pool: "on" | "off", count: number) => async () => {
    const c = clients[pool][n++ % clients[pool].length] as IdClient;
    await c.next(sequences[n % sequences.length] as string, count);
    return count;
  };
  await timed("warm-up, dedupe on", loops, e2e("on", 1));
  await timed("warm-up, dedupe off", loops, e2e("off", 1));
  const rounds: Record<"on" | "off", number[]> = { on: [], off: [] };
  for (const pool of ["on", "off", "off", "on"] as const) {
    rounds[pool].push((await timed(`idd over Kafka, count=1, dedupe ${pool}`, loops, e2e(pool, 1))).perSecond);
  }
  const single = { perSecond: ((rounds.on[0] as number) + (rounds.on[1] as number)) / 2 };
  const noDedupe = { perSecond: ((rounds.off[0] as number) + (rounds.off[1] as number)) / 2 };
  const batch = await timed(`idd over Kafka, count=100, ${loops} callers`, loops, e2e("on", 100));

  say("");
  say(
    `ratios (one run): in-process / baseline ${(inProc.perSecond / baseline.perSecond).toFixed(1)}x;` +
      ` strict / relaxed (blocks of 100) ${(strict100.perSecond / relaxed100.perSecond).toFixed(2)}x;` +
      ` Kafka single, dedupe on / off ${(single.perSecond / noDedupe.perSecond).toFixed(2)}x;` +
      ` Kafka single / baseline ${(single.perSecond / baseline.perSecond).toFixed(2)}x;` +
      ` Kafka batch-100 / baseline ${(batch.perSecond / baseline.perSecond).toFixed(1)}x;` +
      ` batch-100 / single ${(batch.perSecond / single.perSecond).toFixed(1)}x`,
  );

  await Promise.all([...clients.on, ...clients.off].map((c) => c.close({ deleteReplyTopic: false })));
  await Promise.all(workers.map((w) => stopWorker(w)));
  await redis.del(baseKey);
  redis.disconnect();
  await store.close();
}
