/**
 * A consumer's place in its group, on a real broker, through the seam (src/transport/kafka):
 *
 * - A batch that waits on something slow for longer than the session timeout, without one explicit
 *   heartbeat (a retry loop on a fenced Redis counter did: 30 × 100 ms, then more), keeps its
 *   partition: the consumer heartbeats by itself while a batch runs.
 * - A member the coordinator expelled (its event loop blocked past the session timeout) rejoins as
 *   a new member; even when the same partition comes back, the owner is told it lost everything
 *   first, so it takes the partition anew (new gen, blocks dropped) instead of keeping state another
 *   owner may have made stale in between.
 * - While the coordinator has not vouched for the member within the lease (half the session
 *   timeout), the batch is told so (`proven()` false), and is again once a heartbeat succeeds.
 */
import { randomUUID } from "node:crypto";
import { afterAll, expect, inject, test } from "vitest";
import { type Consumer, createKafka } from "../../src/transport/kafka/index.js";
import { ServedAdmin } from "../../stack/kafka-admin.js";
import { poll, sleep } from "../support/wait.js";

const services = inject("services");
const admin = new ServedAdmin(services.kafkaBrokers);
const transport = createKafka({ brokers: services.kafkaBrokers, clientId: `membership-${randomUUID().slice(0, 8)}` });
const topics: string[] = [];
const consumers: Consumer[] = [];

afterAll(async () => {
  await Promise.all(consumers.map((c) => c.close().catch(() => {})));
  await admin.deleteTopics(topics);
  await admin.close();
  await transport.close();
});

const SESSION_MS = 6000;

/** A topic of one partition with one record, and a consumer of it whose batches run `handle`. */
async function setup(handle: (proven: () => boolean) => Promise<void>) {
  const topic = `membership.${randomUUID()}`;
  topics.push(topic);
  await admin.createTopics([{ topic, partitions: 1 }]);
  const producer = await transport.producer();
  await producer.sendPartition(topic, 0, [{ topic, key: "k", value: Buffer.from("v"), headers: {} }]);
  await producer.close();
  const assignments: number[][] = [];
  const done: string[] = [];
  const consumer = await transport.consumer({
    groupId: `membership-${randomUUID()}`,
    topic,
    sessionTimeoutMs: SESSION_MS,
    heartbeatMs: 1000,
    onAssigned: (p) => assignments.push(p),
    onBatch: async (batch, ctx) => {
      await handle(() => ctx.proven());
      const last = batch.records.at(-1)?.offset as string;
      ctx.commit(String(Number(last) + 1));
      done.push(last);
    },
  });
  consumers.push(consumer);
  return { assignments, done };
}

test("a batch waiting longer than the session timeout without heartbeating keeps its partition", async () => {
  const { assignments, done } = await setup(() => sleep(SESSION_MS * 1.6));
  expect(await poll(() => done.length > 0, { timeoutMs: 30_000 })).toBe(true);
  await sleep(2000); // an expelled member would rejoin now
  expect(assignments).toEqual([[0]]);
}, 60_000);

test("a member expelled while blocked rejoins as a new one: told it lost everything, then given its partition anew", async () => {
  const proofs: boolean[] = [];
  const { assignments, done } = await setup(async (proven) => {
    proofs.push(proven());
    if (proofs.length > 1) return;
    const until = Date.now() + SESSION_MS * 1.6;
    while (Date.now() < until); // the event loop blocked: no heartbeat can go out
    proofs.push(proven());
  });
  // The expelled member's batch cannot be committed; the new member reads the record again.
  expect(await poll(() => assignments.length >= 3 && done.length > 0, { timeoutMs: 40_000 })).toBe(true);
  expect(assignments.slice(0, 3)).toEqual([[0], [], [0]]);
  expect(proofs.slice(0, 2)).toEqual([true, false]); // vouched for at first; not once the lease ran out
}, 60_000);
