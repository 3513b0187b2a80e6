/**
 * A client's reply topic deleted while the worker's producer runs: kafkajs keeps every topic it
 * ever sent to in its metadata requests, and the first send that names a topic new to it failed on
 * the deleted one (kafkajs #1622), after its retries: the next new client's first reply came about
 * a second late, and the worker logged four errors for it. The reply path now renews the producer
 * before such a send, so it does not fail; and a topic deleted after that look (clients that come
 * and go at once) is dropped from kafkajs's targets by idd's seam (gone-targets.ts) instead of
 * failing the send.
 */
import { randomUUID } from "node:crypto";
import { afterAll, expect, inject, test } from "vitest";
import { createKafka, type Producer } from "../../src/transport/kafka/index.js";
import { ReplySender } from "../../src/transport/reply-sender.js";
import { TopicMetadata } from "../../src/transport/topic-metadata.js";
import { ServedAdmin } from "../../stack/kafka-admin.js";
import { poll } from "../support/wait.js";

const services = inject("services");
const admin = new ServedAdmin(services.kafkaBrokers);
const transport = createKafka({ brokers: services.kafkaBrokers, clientId: `deleted-${randomUUID().slice(0, 8)}` });
const run = randomUUID().slice(0, 8);
const [first, second, third, fourth] = ["first", "second", "third", "fourth"].map((t) => `deleted.${run}.${t}`) as [
  string,
  string,
  string,
  string,
];

afterAll(async () => {
  await admin.deleteTopics([first, second, third, fourth]);
  await admin.close();
  await transport.close();
});

const record = (topic: string) => ({ topic, partition: 0, key: "k", value: Buffer.from("reply"), headers: {} });

test("a reply to a new topic after the producer's earlier topic was deleted goes out without a failed send", async () => {
  await admin.createTopics([{ topic: first, partitions: 1 }]);
  const real = await transport.producer();
  // The real producer, with every failed send written down.
  const failed: string[] = [];
  const producer: Producer = {
    get sentTo() {
      return real.sentTo;
    },
    renewBeforeNextSend: () => real.renewBeforeNextSend(),
    send: (records) => real.send(records),
    sendPartition: (topic, partition, records) =>
      real.sendPartition(topic, partition, records).catch((e: unknown) => {
        failed.push(`${topic}: ${(e as Error).message}`);
        throw e;
      }),
    close: () => real.close(),
  };
  const metadata = new TopicMetadata(() => transport.topicPartitions());
  const sender = new ReplySender(producer, metadata, { maxRecords: 100, maxBytes: 100_000, retryMs: 10_000, concurrency: 2 });
  try {
    expect(await sender.deliver([record(first)], async () => {})).toEqual([undefined]);
    await admin.deleteTopics([first]);
    expect(await poll(async () => !(await transport.topicPartitions()).has(first))).toBe(true);
    await admin.createTopics([{ topic: second, partitions: 1 }]);
    // What a step does first: the reply topic a request names is looked up until it shows.
    expect((await metadata.partitions([{ topic: second }], metadata.now())).get(second)).toBe(1);
    expect(await sender.deliver([record(second)], async () => {})).toEqual([undefined]);
    expect(failed).toEqual([]);
    expect((await admin.topicOffsets(second))[0]?.high).toBe("1");
  } finally {
    await producer.close();
  }
});

test("a topic deleted after the reply path looked: the producer's send to a new topic drops it from kafkajs's targets and succeeds", async () => {
  await admin.createTopics([{ topic: third, partitions: 1 }]);
  const producer = await transport.producer();
  try {
    await producer.sendPartition(third, 0, [record(third)]);
    await admin.deleteTopics([third]);
    expect(await poll(async () => !(await transport.topicPartitions()).has(third))).toBe(true);
    await admin.createTopics([{ topic: fourth, partitions: 1 }]);
    // Straight to the producer, as a send racing a deletion meets it: no look at the snapshot first.
    const sent = await producer.sendPartition(fourth, 0, [record(fourth)]).then(
      () => "sent",
      (e: unknown) => (e as Error).message,
    );
    expect(sent).toBe("sent");
    expect((await admin.topicOffsets(fourth))[0]?.high).toBe("1");
  } finally {
    await producer.close();
  }
});
