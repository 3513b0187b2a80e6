/**
 * The pipelined fetcher (src/transport/kafka/fetcher.ts) on a real broker: a record on an idle
 * partition is handled while another partition's batch is still being handled (kafkajs's own
 * fetcher fetched again only once every batch of the last fetch was handled), a partition is never
 * handed two batches at once, and every record is handled once, in offset order.
 */
import { randomUUID } from "node:crypto";
import { afterAll, expect, inject, test } from "vitest";
import { type Consumer, createKafka, type InRecord } from "../../src/transport/kafka/index.js";
import { ServedAdmin } from "../../stack/kafka-admin.js";
import { poll } from "../support/wait.js";

const services = inject("services");
const admin = new ServedAdmin(services.kafkaBrokers);
const transport = createKafka({ brokers: services.kafkaBrokers, clientId: `fetcher-${randomUUID().slice(0, 8)}` });
const topics: string[] = [];
const consumers: Consumer[] = [];

afterAll(async () => {
  await Promise.all(consumers.map((c) => c.close().catch(() => {})));
  await admin.deleteTopics(topics);
  await admin.close();
  await transport.close();
});

async function newTopic(partitions: number): Promise<string> {
  const topic = `fetcher.${randomUUID()}`;
  topics.push(topic);
  await admin.createTopics([{ topic, partitions }]);
  return topic;
}

const record = (topic: string, i: number) => ({ topic, key: `k${i}`, value: Buffer.from(String(i)), headers: {} });

test("a record on an idle partition is handled while another partition's batch is still being handled", async () => {
  const topic = await newTopic(2);
  const producer = await transport.producer();
  let releaseFirst = () => {};
  const firstHeld = new Promise<void>((r) => {
    releaseFirst = r;
  });
  const handled: string[] = [];
  const consumer = await transport.consumer({
    groupId: `fetcher-${randomUUID()}`,
    topic,
    heartbeatMs: 500,
    onBatch: async (batch, ctx) => {
      handled.push(`p${batch.partition} start`);
      // Partition 0's batch is held until partition 1's record was handled, or 20 s at most.
      if (batch.partition === 0) await Promise.race([firstHeld, new Promise((r) => setTimeout(r, 20_000))]);
      handled.push(`p${batch.partition} end`);
      ctx.commit(String(Number((batch.records.at(-1) as InRecord).offset) + 1));
    },
  });
  consumers.push(consumer);
  await producer.sendPartition(topic, 0, [record(topic, 0)]);
  expect(await poll(() => handled.includes("p0 start"), { timeoutMs: 30_000 })).toBe(true);
  await producer.sendPartition(topic, 1, [record(topic, 1)]);
  await poll(() => handled.includes("p1 end"), { timeoutMs: 10_000 });
  releaseFirst();
  await poll(() => handled.includes("p0 end"), { timeoutMs: 30_000 });
  expect(handled).toEqual(["p0 start", "p1 start", "p1 end", "p0 end"]);
}, 90_000);

test("8,000 records on 4 partitions, handlers of uneven speed: never two batches of one partition at once, each record once and in order", async () => {
  const PARTITIONS = 4;
  const N = 8000;
  const topic = await newTopic(PARTITIONS);
  const producer = await transport.producer();
  const seen = Array.from({ length: PARTITIONS }, () => [] as number[]);
  const inFlight = new Map<number, number>();
  let overlaps = 0;
  const consumer = await transport.consumer({
    groupId: `fetcher-${randomUUID()}`,
    topic,
    heartbeatMs: 500,
    onBatch: async (batch, ctx) => {
      const p = batch.partition;
      inFlight.set(p, (inFlight.get(p) ?? 0) + 1);
      if ((inFlight.get(p) ?? 0) > 1) overlaps++;
      // Partition 0 slow, the others quick: the quick ones are fetched again meanwhile.
      await new Promise((r) => setTimeout(r, p === 0 ? 20 : Math.random() * 3));
      for (const r of batch.records) seen[p]?.push(Number(r.value?.toString()));
      inFlight.set(p, (inFlight.get(p) ?? 0) - 1);
      ctx.commit(String(Number((batch.records.at(-1) as InRecord).offset) + 1));
    },
  });
  consumers.push(consumer);
  for (let from = 0; from < N; from += 500) {
    await Promise.all(
      Array.from({ length: PARTITIONS }, (_, p) =>
        producer.sendPartition(
          topic,
          p,
          Array.from({ length: 500 / PARTITIONS }, (_, k) => record(topic, from + k * PARTITIONS + p)),
        ),
      ),
    );
  }
  await poll(() => seen.reduce((n, s) => n + s.length, 0) >= N, { timeoutMs: 60_000 });
  expect(overlaps).toBe(0);
  for (let p = 0; p < PARTITIONS; p++) {
    const expected = Array.from({ length: N / PARTITIONS }, (_, i) => {
      const batch = Math.floor(i / (500 / PARTITIONS));
      return batch * 500 + (i % (500 / PARTITIONS)) * PARTITIONS + p;
    });
    expect(seen[p]).toEqual(expected);
  }
}, 120_000);
