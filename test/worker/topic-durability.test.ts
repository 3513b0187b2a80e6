/**
 * The topics a worker creates are replicated as configured, and what they have is said at start.
 * This stack has one broker: by default a worker creates them with replication factor 1 and
 * min.insync.replicas 1 (what the cluster has), and a replication factor the cluster cannot hold
 * stops the start with one coded line instead of a broker error on the first reply.
 */
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import kafkajs, { Kafka, logLevel } from "kafkajs";
import { pino } from "pino";
import { afterAll, expect, inject, test } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { isIddError } from "../../src/core/errors.js";
import { Worker } from "../../src/worker/worker.js";
import { ownDatabase } from "../support/workers.js";

const services = ownDatabase(inject("services"), "durability");
const admin = new Kafka({ brokers: services.kafkaBrokers, logLevel: logLevel.NOTHING }).admin();
const topics: string[] = [];

afterAll(async () => {
  await admin.deleteTopics({ topics }).catch(() => {});
  await admin.disconnect();
});

function configFor(run: string, extra: Record<string, string> = {}) {
  topics.push(`dur.${run}.requests`, `dur.${run}.dlq`);
  return loadConfig(
    {
      IDD_REQUEST_TOPIC: `dur.${run}.requests`,
      IDD_DLQ_TOPIC: `dur.${run}.dlq`,
      IDD_GROUP_ID: `dur-${run}`,
      IDD_REQUEST_PARTITIONS: "2",
      IDD_WORKER_ID: `dur-${run}`,
      ...extra,
    },
    services,
  );
}

test("by default the topics get what the cluster has (1 broker: 1 copy, min.insync.replicas 1), and the start says so", async () => {
  const run = randomUUID().slice(0, 8);
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _enc, done) => done(void lines.push(String(chunk))) });
  const worker = await Worker.start({ config: configFor(run), logger: pino({ level: "info" }, sink) });
  try {
    await admin.connect();
    const { topics: meta } = await admin.fetchTopicMetadata({ topics: [`dur.${run}.requests`] });
    expect(meta[0]?.partitions.map((p) => p.replicas.length)).toEqual([1, 1]);
    const { resources } = await admin.describeConfigs({
      resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: `dur.${run}.requests`, configNames: ["min.insync.replicas"] }],
      includeSynonyms: false,
    });
    expect(resources[0]?.configEntries[0]?.configValue).toBe("1");
    const said = lines.map((l) => JSON.parse(l) as { msg: string; topic?: string; replicationFactor?: number; brokers?: number });
    for (const topic of [`dur.${run}.requests`, `dur.${run}.dlq`])
      expect(said.find((l) => l.msg === "topic durability" && l.topic === topic)).toMatchObject({ replicationFactor: 1, brokers: 1 });
  } finally {
    await worker.stop();
  }
});

test("a replication factor the cluster cannot hold stops the start with CONFIG_INVALID, naming the brokers", async () => {
  const config = configFor(randomUUID().slice(0, 8), { IDD_TOPIC_REPLICATION_FACTOR: "3" });
  await expect(Worker.start({ config, logger: pino({ level: "silent" }) })).rejects.toSatisfy(
    (e) => isIddError(e, "CONFIG_INVALID") && /replication factor 3 .* cluster of 1 broker/.test(e.message),
  );
});

test("min.insync.replicas above the replication factor is a configuration problem", () => {
  expect(() => configFor("x", { IDD_TOPIC_REPLICATION_FACTOR: "2", IDD_TOPIC_MIN_INSYNC_REPLICAS: "3" })).toThrow(
    /IDD_TOPIC_MIN_INSYNC_REPLICAS must be at most IDD_TOPIC_REPLICATION_FACTOR/,
  );
});
