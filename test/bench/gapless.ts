/**
 * The gapless section of `npm run bench` (`--only gapless`): what gapless numbering costs. The
 * dispenser (no Kafka, whose cost is the same either way) answers steps of requests of count 1 on
 * the real Redis and MongoDB for a plain monotonic sequence (blocks from Redis) and a gapless one
 * (a MongoDB document per number, one insert per step), taking turns so machine noise falls on
 * both, at two step sizes: 1 request a step (a client waiting for each answer) and `--gapless-step`
 * requests a step (a loaded worker reads many at once). Prints numbers a second and the gapless
 * sequence's ratio to the plain one at the same step size; then the same for CONFIRMs, one request
 * of 1 number each, against issuing.
 */
import { randomUUID } from "node:crypto";
import { pino } from "pino";
import type { ServiceSettings } from "../../src/config/services.js";
import { Dispenser } from "../../src/issuing/dispenser.js";
import { Allocator } from "../../src/issuing/sources/counter/allocator.js";
import { GaplessSource } from "../../src/issuing/sources/gapless/gapless-source.js";
import { Ownership } from "../../src/ownership/ownership.js";
import type { IdReply } from "../../src/protocol/reply.js";
import type { IdRequest } from "../../src/protocol/request.js";
import { AnswerRecorder } from "../../src/recording/answer-recorder.js";
import { SequenceCache } from "../../src/sequences/cache.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { scriptClient } from "../support/redis.js";

export interface GaplessBenchOptions {
  /** Seconds per turn; each target gets `rounds` turns per step size. */
  seconds: number;
  rounds: number;
  /** Requests a step in the larger step size. */
  step: number;
}

const request = (sequence: string, settle?: IdRequest["settle"]): IdRequest => ({
  requestId: randomUUID(),
  sequence,
  count: 1,
  replyTo: null,
  deadline: null,
  fields: {},
  ...(settle && { settle }),
});

export async function gaplessBench(services: ServiceSettings, say: (s: string) => void, o: GaplessBenchOptions): Promise<void> {
  const redis = scriptClient(services.redisUrl);
  const store = new Store(services.mongodbUrl);
  await store.ensureIndexes();
  const allocator = new Allocator({
    redis,
    store,
    worker: "bench-gapless",
    config: {
      minBlock: 100,
      maxBlock: 100_000,
      initialBlock: 10_000,
      targetBlockMs: 10_000,
      prefetchAt: 0.5,
      reserveLowMs: 900_000,
      reserveAheadMs: 1_800_000,
      minReservation: 100_000,
    },
    clock: Date.now,
    flushMs: 200,
    sampleMs: 60_000,
    onLogError: () => {},
  });
  const ownership = new Ownership(redis, `bench-gapless-${randomUUID()}`);
  const dispenser = new Dispenser({
    ownership,
    allocator,
    recorder: new AnswerRecorder(redis, 300_000),
    sequences: new SequenceCache(store, { ttlMs: 60_000, clock: Date.now }),
    gapless: new GaplessSource(store, "bench-gapless"),
    heartbeatMs: 1000,
    stepBudgetMs: 5000,
    redisTimeoutMs: 2000,
    maxFormatted: 1000,
    clock: Date.now,
    logger: pino({ level: "silent" }),
  });
  ownership.assigned([0]);
  const run = randomUUID().slice(0, 8);
  const plain = `bench-plain-${run}`;
  const gapless = `bench-gapless-${run}`;
  await store.createSequence(defineSequence({ name: plain }, new Date()));
  await store.createSequence(defineSequence({ name: gapless, gapless: true, confirmTimeout: "1h" }, new Date()));
  const ok = (replies: IdReply[]) => {
    for (const r of replies) if (r.status !== "OK") throw new Error(`${r.sequence}: ${r.error?.code} ${r.error?.message}`);
    return replies;
  };
  const issued: bigint[] = [];

  const results = new Map<string, { numbers: number; ms: number }>();
  const measure = async (key: string, step: () => IdRequest[], keep = false) => {
    const r = results.get(key) ?? { numbers: 0, ms: 0 };
    const until = performance.now() + o.seconds * 1000;
    const t0 = performance.now();
    while (performance.now() < until) {
      const requests = step();
      const replies = ok(await dispenser.answer(0, requests, async () => {}));
      if (keep) for (const x of replies) issued.push(x.ranges[0]?.first as bigint);
      r.numbers += requests.length;
    }
    r.ms += performance.now() - t0;
    results.set(key, r);
  };
  const steps = [1, o.step];
  const turn = async () => {
    for (const size of steps) {
      await measure(`plain:${size}`, () => Array.from({ length: size }, () => request(plain)));
      await measure(`gapless:${size}`, () => Array.from({ length: size }, () => request(gapless)), true);
    }
    await measure("confirm:1", () => [
      request(gapless, { action: "CONFIRM", numbers: [issued.shift() as bigint], reason: null, period: null }),
    ]);
  };
  try {
    await turn(); // warm-up
    results.clear();
    for (let round = 0; round < o.rounds; round++) await turn();
  } finally {
    await allocator.close();
    redis.disconnect();
    await store.close();
  }
  const rate = (key: string) => {
    const r = results.get(key) as { numbers: number; ms: number };
    return (r.numbers * 1000) / r.ms;
  };
  say("gapless: numbers/s the dispenser issues (no Kafka), requests of count 1, plain (Redis blocks) against gapless (a MongoDB");
  say(`document per number, one insert per step); ${o.rounds} turns of ${o.seconds} s each per target and step size`);
  say(`${"requests a step".padEnd(18)} ${"plain".padStart(10)} ${"gapless".padStart(10)} ${"gapless/plain".padStart(14)}`);
  for (const size of steps)
    say(
      `${String(size).padEnd(18)} ${rate(`plain:${size}`).toFixed(0).padStart(10)} ${rate(`gapless:${size}`).toFixed(0).padStart(10)} ${`${(rate(`gapless:${size}`) / rate(`plain:${size}`)).toFixed(3)}x`.padStart(14)}`,
    );
  say(
    `CONFIRM of 1 number, 1 request a step: ${rate("confirm:1").toFixed(0)}/s (${(rate("confirm:1") / rate("gapless:1")).toFixed(2)}x gapless issuing at 1 a step)`,
  );
}
