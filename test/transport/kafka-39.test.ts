/**
 * The Kafka 3.9 line, still supported beside the stack's default 4.x: a broker of that line of its
 * own (`IDD_STACK_KAFKA=3.9`, a stack folder and ports of this test), started, used and stopped
 * here. A worker on it creates its topics and answers two clients, one on the Java partitioner and
 * one on librdkafka's default (whose requests are mostly forwarded home), on shared sequences:
 * every number collected, none twice, each sequence's numbers increasing in the order they came.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import { loadConfig } from "../../src/config/config.js";
import { Worker } from "../../src/worker/worker.js";
import { layoutFromEnv, REPO_ROOT, type StackLayout } from "../../stack/paths.js";
import { down, up } from "../../stack/stack.js";
import { librdkafkaDefault } from "../support/partitioners.js";
import { ownDatabase } from "../support/workers.js";

const layout: StackLayout = layoutFromEnv({
  ...process.env,
  IDD_STACK_KAFKA: "3.9",
  IDD_STACK_DIR: join(REPO_ROOT, ".stack-kafka39"),
  // Below the kernel's ephemeral ports (32768 and up): a fixed port there can be held for a moment
  // as the source port of any outgoing connection, and the stack then finds it taken.
  IDD_STACK_PORT_BASE: "28000",
});
const services = ownDatabase(inject("services"), "kafka39");
let brokers: string[] = [];

beforeAll(async () => {
  const r = await up({ layout, services: ["kafka"] });
  brokers = (r.env.KAFKA_BROKERS ?? "").split(",");
}, 600_000);
afterAll(async () => {
  await down({ layout, services: ["kafka"] });
}, 120_000);

test("Kafka 3.9: a worker answers clients on both partitioners, every number once and in order", async () => {
  expect(layout.kafkaVersion).toMatch(/^3\.9\./);
  const run = randomUUID().slice(0, 8);
  const on = { ...services, kafkaBrokers: brokers };
  const config = loadConfig(
    {
      IDD_REQUEST_TOPIC: `k39.${run}.requests`,
      IDD_DLQ_TOPIC: `k39.${run}.dlq`,
      IDD_GROUP_ID: `k39-${run}`,
      IDD_REQUEST_PARTITIONS: "4",
      IDD_WORKER_ID: `k39-${run}`,
      IDD_AUTO_CREATE_SEQUENCES: "true",
    },
    on,
  );
  const worker = await Worker.start({ config, logger: pino({ level: "silent" }) });
  const clients = await Promise.all(
    [undefined, librdkafkaDefault].map((partitioner) =>
      IdClient.connect({ brokers, requestTopic: config.requestTopic, timeoutMs: 60_000, ...(partitioner && { partitioner }) }),
    ),
  );
  try {
    const names = [0, 1, 2, 3, 4, 5].map((i) => `k39-${run}-${i}`);
    const got = new Map<string, bigint[]>(names.map((n) => [n, []]));
    const seen = clients.map(() => new Map<string, bigint[]>());
    await Promise.all(
      clients.map(async (c, k) => {
        for (let i = 0; i < 60; i++) {
          const name = names[(i + k) % names.length] as string;
          const r = await c.next(name, 1 + (i % 3));
          for (const x of r.ranges)
            for (let n = x.first; n <= x.last; n++) {
              got.get(name)?.push(n);
              seen[k]?.set(name, [...(seen[k]?.get(name) ?? []), n]);
            }
        }
      }),
    );
    // Each client waits for a reply before its next request, so its numbers of a sequence increase
    // (G2); across both clients, no number twice (G1).
    for (const perClient of seen)
      for (const [name, list] of perClient) expect(list, name).toEqual([...list].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    let total = 0;
    for (const [name, list] of got) {
      expect(new Set(list).size, name).toBe(list.length);
      total += list.length;
    }
    expect(total).toBe(2 * (20 * 1 + 20 * 2 + 20 * 3));
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await worker.stop();
  }
}, 300_000);
