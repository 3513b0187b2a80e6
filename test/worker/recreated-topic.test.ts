/**
 * A request topic deleted and created again with fewer partitions, under a Redis that still holds
 * the larger count workers routed by: a worker that starts must not route to partitions that no
 * longer exist (every forward would fail, for good, and the partition would stall). It routes by
 * the topic's count and sets the count in force back to it.
 */
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import { loadConfig } from "../../src/config/config.js";
import { routeKey } from "../../src/redis/keys.js";
import { Worker } from "../../src/worker/worker.js";
import { ownDatabase } from "../support/workers.js";

const services = ownDatabase(inject("services"), "recreated");
const run = randomUUID().slice(0, 8);
const topic = `recreated.${run}.requests`;
const redis = new Redis(services.redisUrl);
let worker: Worker | undefined;
let client: IdClient | undefined;

afterAll(async () => {
  await client?.close({ deleteReplyTopic: true });
  await worker?.stop();
  await redis.del(routeKey(topic));
  redis.disconnect();
});

test("a worker starting on a topic smaller than the count in force routes by the topic's count and answers", async () => {
  await redis.set(routeKey(topic), "12"); // what workers of the topic's earlier incarnation routed by
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _enc, done) => done(void lines.push(String(chunk))) });
  const config = loadConfig(
    {
      IDD_REQUEST_TOPIC: topic,
      IDD_DLQ_TOPIC: `recreated.${run}.dlq`,
      IDD_GROUP_ID: `recreated-${run}`,
      IDD_REQUEST_PARTITIONS: "2",
      IDD_WORKER_ID: `recreated-${run}`,
      IDD_AUTO_CREATE_SEQUENCES: "true",
    },
    services,
  );
  worker = await Worker.start({ config, logger: pino({ level: "info" }, sink) });
  expect(await redis.get(routeKey(topic))).toBe("2");
  expect(lines.some((l) => l.includes("it was created again"))).toBe(true);
  client = await IdClient.connect({ brokers: services.kafkaBrokers, requestTopic: topic, timeoutMs: 20_000 });
  // Sequences whose home under 12 partitions is not a partition of 2: each would be forwarded into nothing.
  for (const sequence of ["a", "b", "c", "d", "e", "f"].map((x) => `recreated-${run}-${x}`)) {
    const r = await client.next(sequence, 1);
    expect(r.ranges).toEqual([{ first: 1n, last: 1n }]);
  }
}, 90_000);
