/**
 * A worker's wall clock stepped back (issue #28's clock nemesis: NTP stepping a clock that ran
 * ahead, an operator setting it) keeps the worker in its group. kafkajs spaces heartbeats by the
 * wall clock (`Date.now() >= lastRequest + interval`), so after a step back it sent none until the
 * clock had caught up with the last one's time: a worker whose clock went 10 s back was expelled
 * from the group (6 s session) and its partitions rebalanced; one an hour back, every 6 s for an hour.
 * The seam (kafkajs-modules.ts) reads a last heartbeat time in the future as now.
 */
import { randomUUID } from "node:crypto";
import { afterAll, expect, inject, test, vi } from "vitest";
import { type Consumer, createKafka } from "../../src/transport/kafka/index.js";
import { ServedAdmin } from "../../stack/kafka-admin.js";
import { sleep } from "../support/wait.js";

const services = inject("services");
const admin = new ServedAdmin(services.kafkaBrokers);
const transport = createKafka({ brokers: services.kafkaBrokers, clientId: `clock-step-${randomUUID().slice(0, 8)}` });
const topic = `clock-step.${randomUUID()}`;
let consumer: Consumer | undefined;

afterAll(async () => {
  vi.restoreAllMocks();
  await consumer?.close().catch(() => {});
  await admin.deleteTopics([topic]);
  await admin.close();
  await transport.close();
});

const SESSION_MS = 6000;

test("a wall clock stepped 60 s back keeps the member in its group: it heartbeats on", async () => {
  await admin.createTopics([{ topic, partitions: 1 }]);
  const producer = await transport.producer();
  await producer.sendPartition(topic, 0, [{ topic, key: "k", value: Buffer.from("v"), headers: {} }]);
  const assignments: number[][] = [];
  const batches: string[] = [];
  const proofs: boolean[] = [];
  consumer = await transport.consumer({
    groupId: `clock-step-${randomUUID()}`,
    topic,
    sessionTimeoutMs: SESSION_MS,
    heartbeatMs: 500,
    onAssigned: (p) => assignments.push(p),
    onBatch: async (batch, ctx) => {
      batches.push(batch.records.at(-1)?.offset as string);
      proofs.push(ctx.proven());
      ctx.commit(String(Number(batch.records.at(-1)?.offset) + 1));
    },
  });
  for (let i = 0; i < 100 && batches.length === 0; i++) await sleep(100);
  expect(batches).toEqual(["0"]);

  // The host's wall clock goes 60 s back (the fault); kafkajs and idd run on.
  const realNow = Date.now.bind(Date);
  vi.spyOn(Date, "now").mockImplementation(() => realNow() - 60_000);
  await sleep(SESSION_MS * 2.5);
  // Still the one member it was: never expelled, so never given its partition again.
  expect(assignments).toEqual([[0]]);
  // And it still reads: a record written now is answered.
  await producer.sendPartition(topic, 0, [{ topic, key: "k", value: Buffer.from("w"), headers: {} }]);
  for (let i = 0; i < 100 && batches.length < 2; i++) await sleep(100);
  await producer.close();
  expect(batches).toEqual(["0", "1"]);
  expect(assignments).toEqual([[0]]);
  // The coordinator vouched for it within the ownership lease all along (design §5.17): heartbeats went on.
  expect(proofs).toEqual([true, true]);
}, 60_000);
