/**
 * A topic grown while a producer runs: kafkajs leaves out, and reports as sent, records for a
 * partition its own metadata does not show yet. The reply path (and every forward to a request
 * partition the topic just gained) must never count such a record as delivered.
 */
import { randomUUID } from "node:crypto";
import { afterAll, expect, inject, test } from "vitest";
import { createKafka, SendFailure } from "../../src/transport/kafka/index.js";
import { ReplySender } from "../../src/transport/reply-sender.js";
import { TopicMetadata } from "../../src/transport/topic-metadata.js";
import { ServedAdmin } from "../../stack/kafka-admin.js";

const services = inject("services");
const admin = new ServedAdmin(services.kafkaBrokers);
const transport = createKafka({ brokers: services.kafkaBrokers, clientId: `grown-${randomUUID().slice(0, 8)}` });
const topic = `grown.${randomUUID()}`;

afterAll(async () => {
  await admin.deleteTopics([topic]);
  await admin.close();
  await transport.close();
});

const record = (value: string) => ({ topic, key: "k", value: Buffer.from(value), headers: {} });
/** Records in `partition` (asked once every broker leads every partition the topic has now). */
const written = async (partition: number) => Number((await admin.topicOffsets(topic)).find((o) => o.partition === partition)?.high ?? 0);

test("a send to a partition the producer does not know yet fails (or is written), never vanishes; the reply path then delivers it", async () => {
  await admin.createTopics([{ topic, partitions: 1 }]);
  const producer = await transport.producer();
  try {
    await producer.sendPartition(topic, 0, [record("before")]); // the producer's metadata: 1 partition
    await admin.addPartitions(topic, 3);
    const first = await producer.sendPartition(topic, 2, [record("direct")]).then(
      () => "sent",
      (e: unknown) => (e instanceof SendFailure ? e.kind : String(e)),
    );
    expect(["sent", "unknown-topic"]).toContain(first);
    expect(await written(2)).toBe(first === "sent" ? 1 : 0); // "sent" only when it really was
    const sender = new ReplySender(producer, new TopicMetadata(() => transport.topicPartitions()), {
      maxRecords: 100,
      maxBytes: 100_000,
      retryMs: 10_000,
      concurrency: 2,
    });
    const before = await written(2);
    expect(await sender.deliver([{ ...record("via the reply path"), partition: 2 }], async () => {})).toEqual([undefined]);
    expect(await written(2)).toBe(before + 1);
  } finally {
    await producer.close();
  }
});
