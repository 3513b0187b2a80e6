/**
 * The formats section of `npm run bench` (`--only formats`): what printing (and obfuscating) numbers costs. The
 * dispenser (owner token, dedupe, counters, kinds; no Kafka, whose cost is the same for every
 * kind) answers steps of 1,000 requests on the real Redis and MongoDB for a plain sequence and
 * for formatted ones, taking turns so machine noise falls on all, and prints numbers a second
 * and each formatted sequence's ratio to the plain one.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { pino } from "pino";
import type { ServiceSettings } from "../../src/config/services.js";
import { Dispenser } from "../../src/issuing/dispenser.js";
import { Allocator } from "../../src/issuing/sources/counter/allocator.js";
import { SnowflakeIssuer } from "../../src/issuing/sources/snowflake/issuer.js";
import { Ownership } from "../../src/ownership/ownership.js";
import type { IdRequest } from "../../src/protocol/request.js";
import { AnswerRecorder } from "../../src/recording/answer-recorder.js";
import { SequenceCache } from "../../src/sequences/cache.js";
import { defineSequence, type SequenceInput } from "../../src/sequences/definition.js";
import { parseObfuscationKeys } from "../../src/sequences/obfuscation/keys.js";
import { Store } from "../../src/storage/store.js";
import { scriptClient } from "../support/redis.js";

export interface FormatsOptions {
  /** Seconds per turn; each target gets `rounds` turns. */
  seconds: number;
  rounds: number;
}

const STEP = 1000;

export async function formatsBench(services: ServiceSettings, say: (s: string) => void, o: FormatsOptions): Promise<void> {
  const redis = scriptClient(services.redisUrl);
  const store = new Store(services.mongodbUrl);
  const allocation = {
    minBlock: 100,
    maxBlock: 100_000,
    initialBlock: 10_000,
    targetBlockMs: 10_000,
    prefetchAt: 0.5,
    reserveLowMs: 900_000,
    reserveAheadMs: 1_800_000,
    minReservation: 100_000,
  };
  const allocator = new Allocator({
    redis,
    store,
    worker: "bench-formats",
    config: allocation,
    clock: Date.now,
    flushMs: 200,
    sampleMs: 60_000,
    onLogError: () => {},
  });
  const snowflakes = new SnowflakeIssuer({ redis });
  const ownership = new Ownership(redis, `bench-formats-${randomUUID()}`);
  const dispenser = new Dispenser({
    ownership,
    allocator,
    snowflakes,
    recorder: new AnswerRecorder(redis, 300_000),
    sequences: new SequenceCache(store, { ttlMs: 60_000, clock: Date.now }),
    heartbeatMs: 1000,
    stepBudgetMs: 5000,
    redisTimeoutMs: 2000,
    maxFormatted: 1000,
    kinds: { obfuscation: parseObfuscationKeys(`1:${randomBytes(32).toString("base64")}`, "bench") },
    clock: Date.now,
    logger: pino({ level: "silent" }),
  });
  ownership.assigned([0]);
  const run = randomUUID().slice(0, 8);
  const targets: { label: string; input: Omit<SequenceInput, "name">; fields: Record<string, string> }[] = [
    { label: "plain (monotonic)", input: {}, fields: {} },
    { label: "{yyyy}{MM}{dd}{seq:8}", input: { kind: "formatted", format: "{yyyy}{MM}{dd}{seq:8}", period: "never" }, fields: {} },
    { label: "snowflake (41/10/12, leased worker id)", input: { kind: "snowflake" }, fields: {} },
    { label: "obfuscated, 12 digits (FF1, AES-256)", input: { kind: "obfuscated", digits: 12 }, fields: {} },
    {
      label: "{yyyy}{MM}{dd}-{obf:10}{check:damm} (FF1, AES-256)",
      input: { kind: "formatted", format: "{yyyy}{MM}{dd}-{obf:10}{check:damm}" },
      fields: {},
    },
    {
      label: "INV-{yy}{MM}-{field:area:3}-{seq:8}{check:damm}",
      input: { kind: "formatted", format: "INV-{yy}{MM}-{field:area:3}-{seq:8}{check:damm}", period: "never" },
      fields: { area: "010" },
    },
  ];
  const names = targets.map((_, i) => `bench-fmt-${run}-${i}`);
  for (const [i, t] of targets.entries()) await store.createSequence(defineSequence({ name: names[i] as string, ...t.input }, new Date()));

  const results = new Map<string, { numbers: number; ms: number }>();
  const measure = async (i: number, count: number) => {
    const t = targets[i] as (typeof targets)[number];
    const key = `${count}:${i}`;
    const r = results.get(key) ?? { numbers: 0, ms: 0 };
    const until = performance.now() + o.seconds * 1000;
    const t0 = performance.now();
    while (performance.now() < until) {
      const requests: IdRequest[] = Array.from({ length: count === 1 ? STEP : STEP / 10 }, () => ({
        requestId: randomUUID(),
        sequence: names[i] as string,
        count,
        replyTo: null,
        deadline: null,
        fields: t.fields,
      }));
      const replies = await dispenser.answer(0, requests, async () => {});
      for (const reply of replies) if (reply.status !== "OK") throw new Error(`${t.label}: ${reply.error?.code} ${reply.error?.message}`);
      r.numbers += requests.length * count;
    }
    r.ms += performance.now() - t0;
    results.set(key, r);
  };
  try {
    for (const count of [1, 100]) for (const i of targets.keys()) await measure(i, count); // warm-up
    results.clear();
    for (let round = 0; round < o.rounds; round++) for (const count of [1, 100]) for (const i of targets.keys()) await measure(i, count);
  } finally {
    await snowflakes.close();
    await allocator.close();
    redis.disconnect();
    await store.close();
  }
  say("formats: numbers/s the dispenser issues (no Kafka) per sequence, steps of 1,000 requests of count 1 or 100 of count 100;");
  say(`ratios are to the plain sequence measured in the same rounds (${o.rounds} turns of ${o.seconds} s each)`);
  say(`${"sequence".padEnd(50)} ${"count 1".padStart(12)} ${"ratio".padStart(6)} ${"count 100".padStart(12)} ${"ratio".padStart(6)}`);
  const rate = (count: number, i: number) => {
    const r = results.get(`${count}:${i}`) as { numbers: number; ms: number };
    return (r.numbers * 1000) / r.ms;
  };
  for (const [i, t] of targets.entries()) {
    const cells = [1, 100].map(
      (count) => `${rate(count, i).toFixed(0).padStart(12)} ${`${(rate(count, i) / rate(count, 0)).toFixed(2)}x`.padStart(6)}`,
    );
    say(`${t.label.padEnd(50)} ${cells.join(" ")}`);
  }
}
