import { randomUUID } from "node:crypto";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, expect, inject, test } from "vitest";
import { ServedAdmin } from "../../stack/kafka-admin.js";

const services = inject("services");
const kafka = new Kafka({ clientId: `smoke-${randomUUID()}`, brokers: services.kafkaBrokers, logLevel: logLevel.NOTHING });
const topic = `smoke.kafka.${randomUUID()}`;
const admin = new ServedAdmin(services.kafkaBrokers);

afterAll(async () => {
  await admin.deleteTopics([topic]);
  await admin.close();
});

test("a record produced to an explicitly created topic is consumed with its key, value and headers", async () => {
  await admin.createTopics([{ topic, partitions: 2 }]);
  expect((await admin.topicMetadata([topic]))[0]?.partitions).toHaveLength(2);

  const producer = kafka.producer();
  const consumer = kafka.consumer({ groupId: `smoke-${randomUUID()}` });
  try {
    await producer.connect();
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const received = new Promise<{ key: string; value: string; header: string }>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) =>
          resolve({ key: String(message.key), value: String(message.value), header: String(message.headers?.kafka_correlationId) }),
      });
    });
    const correlation = randomUUID();
    await producer.send({ topic, messages: [{ key: "order", value: "hello idd", headers: { kafka_correlationId: correlation } }] });
    expect(await received).toEqual({ key: "order", value: "hello idd", header: correlation });
  } finally {
    await consumer.disconnect();
    await producer.disconnect();
  }
});

test("topics are not auto-created: producing to an unknown topic fails", async () => {
  const producer = kafka.producer({ allowAutoTopicCreation: true, retry: { retries: 1 } });
  await producer.connect();
  try {
    await expect(producer.send({ topic: `smoke.missing.${randomUUID()}`, messages: [{ value: "x" }], timeout: 2000 })).rejects.toThrow();
  } finally {
    await producer.disconnect();
  }
});
