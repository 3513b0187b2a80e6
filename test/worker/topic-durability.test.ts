/**
 * The topics a worker creates are replicated as configured, and what they have is said at start.
 * On the suite's single broker a worker creates them with replication factor 1 and
 * min.insync.replicas 1 (what the cluster has), and a replication factor the cluster cannot hold
 * stops the start with one coded line instead of a broker error on the first reply. On the cluster
 * profile's three brokers (test/support/cluster-stack.ts) it creates them with 3 copies and
 * min.insync.replicas 2, and a partition's leader killed loses no record the broker acknowledged.
 */
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { Kafka, logLevel } from "kafkajs";
import { pino } from "pino";
import { afterAll, expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import { loadConfig } from "../../src/config/config.js";
import { isIddError } from "../../src/core/errors.js";
import { Worker } from "../../src/worker/worker.js";
import { kafkaNode, killPartitionLeader, restart } from "../../stack/faults.js";
import { ServedAdmin } from "../../stack/kafka-admin.js";
import { CLUSTER_TEST_TIMEOUT_MS, withCluster } from "../support/cluster-stack.js";
import { ownDatabase } from "../support/workers.js";

const services = ownDatabase(inject("services"), "durability");
const admin = new ServedAdmin(services.kafkaBrokers);
const topics: string[] = [];

afterAll(async () => {
  await admin.deleteTopics(topics);
  await admin.close();
});

function configFor(run: string, extra: Record<string, string> = {}, on = services) {
  if (on === services) topics.push(`dur.${run}.requests`, `dur.${run}.dlq`); // the cluster's are deleted by their test
  return loadConfig(
    {
      IDD_REQUEST_TOPIC: `dur.${run}.requests`,
      IDD_DLQ_TOPIC: `dur.${run}.dlq`,
      IDD_GROUP_ID: `dur-${run}`,
      IDD_REQUEST_PARTITIONS: "2",
      IDD_WORKER_ID: `dur-${run}`,
      ...extra,
    },
    on,
  );
}

test("by default the topics get what the cluster has (1 broker: 1 copy, min.insync.replicas 1), and the start says so", async () => {
  const run = randomUUID().slice(0, 8);
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _enc, done) => done(void lines.push(String(chunk))) });
  const worker = await Worker.start({ config: configFor(run), logger: pino({ level: "info" }, sink) });
  try {
    const meta = await admin.topicMetadata([`dur.${run}.requests`]);
    expect(meta[0]?.partitions.map((p) => p.replicas.length)).toEqual([1, 1]);
    expect(await admin.topicConfig([`dur.${run}.requests`], "min.insync.replicas")).toEqual(["1"]);
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

test(
  "on 3 brokers the topics get 3 copies and min.insync.replicas 2 by default; a partition's leader killed loses no acknowledged record",
  () =>
    withCluster(async ({ layout, kafkaBrokers }) => {
      const run = randomUUID().slice(0, 8);
      const requests = `dur.${run}.requests`;
      const dlq = `dur.${run}.dlq`;
      const kafka = new Kafka({ brokers: kafkaBrokers, logLevel: logLevel.NOTHING });
      const clusterAdmin = new ServedAdmin(kafkaBrokers);
      try {
        const lines: string[] = [];
        const sink = new Writable({ write: (chunk, _enc, done) => done(void lines.push(String(chunk))) });
        const worker = await Worker.start({
          config: configFor(run, {}, { ...services, kafkaBrokers }),
          logger: pino({ level: "info" }, sink),
        });
        await worker.stop();
        const meta = await clusterAdmin.topicMetadata([requests, dlq]);
        for (const t of meta) for (const p of t.partitions) expect(p.replicas.length, `${t.name}-${p.partitionId}`).toBe(3);
        expect(await clusterAdmin.topicConfig([requests, dlq], "min.insync.replicas")).toEqual(["2", "2"]);
        const said = lines.map((l) => JSON.parse(l) as { msg: string; topic?: string });
        for (const topic of [requests, dlq])
          expect(said.find((l) => l.msg === "topic durability" && l.topic === topic)).toMatchObject({ replicationFactor: 3, brokers: 3 });

        // Records acknowledged by all in-sync copies survive their leader: 100 before, 100 after the kill.
        const producer = kafka.producer({ retry: { retries: 20, initialRetryTime: 200 } });
        await producer.connect();
        const sent: string[] = [];
        const send = async (from: number) => {
          for (let i = from; i < from + 100; i++) {
            await producer.send({ topic: dlq, acks: -1, messages: [{ value: `r${i}` }] });
            sent.push(`r${i}`);
          }
        };
        let killed: number | undefined;
        try {
          await send(0);
          const f = await killPartitionLeader(layout, dlq, 0);
          killed = f.killed;
          expect(f.leader).not.toBe(f.killed);
          await send(100);
        } finally {
          await producer.disconnect();
          if (killed !== undefined) await restart(layout, kafkaNode(killed));
        }
        const consumer = kafka.consumer({ groupId: `dur-read-${run}` });
        const got: string[] = [];
        await consumer.connect();
        try {
          await consumer.subscribe({ topic: dlq, fromBeginning: true });
          await consumer.run({ eachMessage: async ({ message }) => void got.push(String(message.value)) });
          const deadline = Date.now() + 60_000;
          while (got.length < sent.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
        } finally {
          await consumer.disconnect();
        }
        // Every acknowledged record is there (a producer's retry could add a copy: that is no loss).
        expect(new Set(got)).toEqual(new Set(sent));
      } finally {
        await clusterAdmin.deleteTopics([requests, dlq]);
        await clusterAdmin.close();
      }
    }),
  CLUSTER_TEST_TIMEOUT_MS,
);

test(
  "three workers started at once on 3 brokers, their topics new: all start (one creates them, the others wait until every broker serves them)",
  () =>
    withCluster(async ({ kafkaBrokers }) => {
      const run = randomUUID().slice(0, 8);
      const on = { ...services, kafkaBrokers };
      const starts = await Promise.allSettled(
        ["a", "b", "c"].map((w) =>
          Worker.start({ config: configFor(run, { IDD_WORKER_ID: `dur-${run}-${w}` }, on), logger: pino({ level: "silent" }) }),
        ),
      );
      const clusterAdmin = new ServedAdmin(kafkaBrokers);
      try {
        for (const s of starts) if (s.status === "fulfilled") await s.value.stop();
        expect(starts.map((s) => (s.status === "fulfilled" ? "started" : String((s.reason as Error).message)))).toEqual([
          "started",
          "started",
          "started",
        ]);
      } finally {
        await clusterAdmin.deleteTopics([`dur.${run}.requests`, `dur.${run}.dlq`]);
        await clusterAdmin.close();
      }
    }),
  CLUSTER_TEST_TIMEOUT_MS,
);

test(
  "an IdClient's reply topic is replicated like the worker's topics: 3 copies and min.insync.replicas 2 on 3 brokers, 1 on the suite's single broker",
  async () => {
    const single = await IdClient.connect({ brokers: services.kafkaBrokers, requestTopic: `dur.${randomUUID().slice(0, 8)}.requests` });
    try {
      const meta = await admin.topicMetadata([single.replyTopic]);
      expect(meta[0]?.partitions.map((p) => p.replicas.length)).toEqual([1]);
    } finally {
      await single.close();
    }
    await withCluster(async ({ kafkaBrokers }) => {
      const client = await IdClient.connect({ brokers: kafkaBrokers, requestTopic: `dur.${randomUUID().slice(0, 8)}.requests` });
      const clusterAdmin = new ServedAdmin(kafkaBrokers);
      try {
        const meta = await clusterAdmin.topicMetadata([client.replyTopic]);
        // One copy would leave the client deaf while its broker is down (the cluster chaos profile kills brokers).
        expect(meta[0]?.partitions.map((p) => p.replicas.length)).toEqual([3]);
        expect(await clusterAdmin.topicConfig([client.replyTopic], "min.insync.replicas")).toEqual(["2"]);
      } finally {
        await client.close();
        await clusterAdmin.close();
      }
    });
  },
  CLUSTER_TEST_TIMEOUT_MS,
);
