/**
 * One sequence, one issuer, whatever the client's partitioner (docs/wire-contract.md: Routing).
 * Two kinds of client ask for the same sequences alternately, each request sent after the previous
 * reply: one on Kafka's Java default (murmur2: Java, Spring, kafkajs) and one on librdkafka's
 * default (CRC-32 `consistent_random`: Python, Go, .NET, Rust, C/C++), across 3 real worker
 * processes. Every number is collected and checked: no duplicate, no decrease. Then the same while
 * the request topic grows from 6 to 12 partitions under that load, with a third client started
 * after the growth: the new partitions must be read, and order must hold through the move.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import { homePartition } from "../../src/protocol/home-partition.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { ServedAdmin } from "../../stack/kafka-admin.js";
import { REPO_ROOT } from "../../stack/paths.js";
import { checkHistory, type Issued } from "../support/history.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { librdkafkaDefault } from "../support/partitioners.js";
import { freePort } from "../support/private-redis.js";
import { poll } from "../support/wait.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker, type WorkerProcess } from "../support/workers.js";

const services = ownDatabase(inject("services"), "route");
const run = randomUUID().slice(0, 8);
const topic = `route.${run}.requests`;
const env = {
  ...serviceEnv(services),
  IDD_REQUEST_TOPIC: topic,
  IDD_DLQ_TOPIC: `route.${run}.dlq`,
  IDD_GROUP_ID: `route-${run}`,
  IDD_REQUEST_PARTITIONS: "6",
  IDD_MIN_BLOCK: "10",
  IDD_INITIAL_BLOCK: "20",
};
const workers: WorkerProcess[] = [];
const clients: IdClient[] = [];
const store = new Store(services.mongodbUrl);
const queries = new MongoQueries(services.mongodbUrl);
const ports = new Map<WorkerProcess, number>();
const admin = new ServedAdmin(services.kafkaBrokers);

/**
 * 8 sequences: 6 whose librdkafka partition differs from their home under both 6 and 12
 * partitions (every request of the CRC-32 client needs a forward), 2 where it agrees under 6.
 */
function pickNames(): string[] {
  const differ: string[] = [];
  const agree: string[] = [];
  for (let i = 0; differ.length < 6 || agree.length < 2; i++) {
    const name = `route-${run}-${i}`;
    const crc = (n: number) => crc32(Buffer.from(name)) % n;
    if (crc(6) !== homePartition(name, 6) && crc(12) !== homePartition(name, 12)) {
      if (differ.length < 6) differ.push(name);
    } else if (crc(6) === homePartition(name, 6) && agree.length < 2) agree.push(name);
  }
  return [...differ, ...agree];
}
const names = pickNames();

const connect = (partitioner?: typeof librdkafkaDefault) =>
  IdClient.connect({ brokers: services.kafkaBrokers, requestTopic: topic, timeoutMs: 60_000, ...(partitioner && { partitioner }) }).then(
    (c) => {
      clients.push(c);
      return c;
    },
  );

beforeAll(async () => {
  for (const name of names) await store.createSequence(defineSequence({ name }, new Date()));
  for (let i = 1; i <= 3; i++) {
    const port = await freePort();
    const w = startWorker(`route-w${i}`, { ...env, IDD_HTTP_PORT: String(port) });
    ports.set(w, port);
    workers.push(w);
  }
  await Promise.all(workers.map((w) => w.assigned));
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(workers.map((w) => stopWorker(w, "SIGKILL")));
  // The workers' logs, for a failure's post-mortem (git-ignored).
  mkdirSync(join(REPO_ROOT, "test-artifacts"), { recursive: true });
  for (const w of workers) writeFileSync(join(REPO_ROOT, "test-artifacts", `routing-${w.id}.log`), `${w.log.join("\n")}\n`);
  await admin.close();
  await queries.dropDatabase();
  await store.close();
});

/** Per sequence, the clients take turns, each request sent after the previous reply; until `until()` says stop. */
async function alternate(turns: () => IdClient[], history: Issued[], until: (round: number) => boolean): Promise<void> {
  await Promise.all(
    names.map(async (sequence) => {
      for (let round = 0; !until(round); round++) {
        for (const client of turns()) {
          const sentAt = performance.now();
          const r = await client.next(sequence, 1 + (round % 3));
          history.push({ sequence, period: r.period, ranges: r.ranges, sentAt, receivedAt: performance.now() });
        }
      }
    }),
  );
}

function expectOrdered(history: Issued[]): void {
  const report = checkHistory(history);
  expect(report.duplicates).toEqual([]);
  expect(report.orderViolations).toEqual([]);
}

test("a murmur2 client and a librdkafka-default client alternating on 8 sequences across 3 workers: 0 duplicates, 0 decreases", async () => {
  const java = await connect();
  const python = await connect(librdkafkaDefault);
  const history: Issued[] = [];
  await alternate(
    () => [java, python],
    history,
    (round) => round >= 40,
  );
  expect(history.length).toBe(8 * 40 * 2);
  expectOrdered(history);
  // The other partitioner's requests really arrived elsewhere (6 of the 8 sequences) and were forwarded home.
  // Each forward is read at home (again, after a rebalance), its wait there counted as a worker's (the hop), not a client's.
  // A step reports its waits once it has committed, after its replies went out: the last ones may come a moment after.
  const counts = async () => {
    let forwarded = 0;
    let waitedHome = 0;
    for (const port of ports.values()) {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      forwarded += Number(/^idd_requests_forwarded_total (\d+)$/m.exec(text)?.[1] ?? 0);
      waitedHome += Number(/^idd_request_wait_seconds_count\{from="worker"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    }
    return { forwarded, waitedHome };
  };
  const last =
    (await poll(
      async () => {
        const c = await counts();
        return c.waitedHome >= c.forwarded && c;
      },
      { timeoutMs: 5000 },
    )) ?? (await counts());
  expect(last.forwarded).toBeGreaterThanOrEqual(6 * 40);
  expect(last.waitedHome).toBeGreaterThanOrEqual(last.forwarded);
}, 120_000);

test("the request topic grows from 6 to 12 partitions under that load: new partitions read within seconds, 0 duplicates, 0 decreases", async () => {
  const before = await connect(); // murmur2, still routing by 6 partitions after the growth (its metadata is older)
  const python = await connect(librdkafkaDefault);
  const history: Issued[] = [];
  let after: IdClient | undefined;
  let grownAt = 0;
  let stopAt = Number.POSITIVE_INFINITY;
  const load = alternate(
    () => (after ? [before, python, after] : [before, python]),
    history,
    () => performance.now() > stopAt,
  );
  await new Promise((r) => setTimeout(r, 3000));
  await admin.addPartitions(topic, 12);
  grownAt = performance.now();
  after = await connect(); // a client started after the growth: murmur2 over 12 partitions
  const afterStarted = history.length;
  // Every worker learns the new count, and the group reads the new partitions.
  const newPartitionRead = async () => {
    for (;;) {
      const assigned = workers.flatMap((w) =>
        w.log.filter((l) => l.includes('"partitions assigned"')).flatMap((l) => (JSON.parse(l) as { partitions: number[] }).partitions),
      );
      if (assigned.some((p) => p >= 6)) return performance.now() - grownAt;
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const readAfterMs = await newPartitionRead();
  stopAt = performance.now() + 15_000;
  await load;
  process.stderr.write(
    `routing test: new partitions assigned ${(readAfterMs / 1000).toFixed(1)} s after the growth; ${history.length} requests, ${history.length - afterStarted} after it\n`,
  );
  expect(readAfterMs).toBeLessThan(60_000); // was 203 s with kafkajs's default metadata age (5 minutes)
  expect(workers.every((w) => w.log.some((l) => l.includes("the request topic has more partitions")))).toBe(true);
  expectOrdered(history);
}, 180_000);
