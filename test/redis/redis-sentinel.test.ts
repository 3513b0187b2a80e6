/**
 * Under Sentinel, on the cluster profile's real Sentinel group (stack/cluster.ts): a worker follows
 * the primary across failovers without an operator step, and idd's Sentinel client does not give up
 * where ioredis's does.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import { redisTopologyFromEnv } from "../../src/config/redis-topology.js";
import { IddError } from "../../src/core/errors.js";
import { createRedis } from "../../src/redis/client.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { SENTINEL_MASTER } from "../../stack/cluster.js";
import { failoverLosingWrites, restart, sentinelRoles } from "../../stack/faults.js";
import { redisCall } from "../../stack/redis.js";
import { CLUSTER_TEST_TIMEOUT_MS, withCluster } from "../support/cluster-stack.js";
import { checkHistory, type Issued } from "../support/history.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { freePort } from "../support/private-redis.js";
import { sleep, waitFor } from "../support/wait.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker } from "../support/workers.js";

/** Cuts a (re)connect off while the client asks the sentinels for the primary, as ioredis's failover detector does on +switch-master. */
function cutOffWhileResolving(redis: Redis): void {
  redis.once("connecting", () => redis.disconnect(true));
  redis.disconnect(true);
}

test(
  "a Sentinel client whose reconnect is cut off while it asks the sentinels connects again (plain ioredis stays closed)",
  () =>
    withCluster(async ({ env }) => {
      const { REDIS_CLUSTER_NODES: _, ...sentinelEnv } = env;
      const topology = redisTopologyFromEnv(sentinelEnv, []);
      if (topology.mode !== "sentinel") throw new Error("cluster.env names no Sentinels");
      const plain = new Redis({ sentinels: topology.sentinels, name: topology.master, failoverDetector: true, maxRetriesPerRequest: 1 });
      const ours = createRedis({ url: "redis://127.0.0.1:1", topology }, { options: { maxRetriesPerRequest: 1 } }) as Redis;
      plain.on("error", () => {});
      try {
        for (const r of [plain, ours]) await waitFor("ready", async () => r.status === "ready", { timeoutMs: 20_000, everyMs: 50 });
        cutOffWhileResolving(plain);
        cutOffWhileResolving(ours);
        await sleep(2000);
        // ioredis 6.0 ends the connection for good ("Connection is closed."): if this fails, ioredis
        // fixed it and src/redis/sentinel-redis.ts can go.
        expect(plain.status).toBe("end");
        await expect(plain.ping()).rejects.toThrow(/Connection is closed/);
        await waitFor("idd's client to be connected again", async () => ours.status === "ready", { timeoutMs: 20_000, everyMs: 100 });
        expect(await ours.ping()).toBe("PONG");
      } finally {
        plain.disconnect();
        ours.disconnect();
      }
    }),
  CLUSTER_TEST_TIMEOUT_MS,
);

test(
  "a worker on Sentinel keeps answering across a switchover (old primary demoted: READONLY, +switch-master) and a failover to a replica that missed writes; every number collected, none twice, order kept",
  () =>
    withCluster(async ({ layout, env: cluster }) => {
      const services = ownDatabase(inject("services"), "sentinel");
      const run = randomUUID().slice(0, 8);
      const topic = `sentinel.${run}.requests`;
      const store = new Store(services.mongodbUrl);
      const names = Array.from({ length: 4 }, (_, i) => `sentinel-${run}-${i}`);
      for (const name of names) await store.createSequence(defineSequence({ name }, new Date()));
      await store.close();
      const worker = startWorker(`sentinel-${run}`, {
        ...serviceEnv(services),
        REDIS_URL: "redis://127.0.0.1:1", // never connected to: the sentinels name the primary
        REDIS_SENTINELS: cluster.REDIS_SENTINELS,
        REDIS_SENTINEL_MASTER: cluster.REDIS_SENTINEL_MASTER,
        IDD_REQUEST_TOPIC: topic,
        IDD_DLQ_TOPIC: `sentinel.${run}.dlq`,
        IDD_GROUP_ID: `sentinel-${run}`,
        IDD_REQUEST_PARTITIONS: "3",
        IDD_MIN_BLOCK: "10",
        IDD_INITIAL_BLOCK: "20",
        IDD_HTTP_PORT: String(await freePort()),
      });
      const client = await IdClient.connect({ brokers: services.kafkaBrokers, requestTopic: topic, timeoutMs: 10_000 });
      const issued: Issued[] = [];
      const failures: string[] = [];
      const okAt = new Map<string, number>();
      let stop = false;
      const loop = async (name: string) => {
        while (!stop) {
          const sentAt = performance.now();
          try {
            const r = await client.next(name, 1 + Math.floor(Math.random() * 3));
            issued.push({ sequence: name, period: r.period, ranges: r.ranges, sentAt, receivedAt: performance.now() });
            okAt.set(name, Date.now());
          } catch (e) {
            if (!(e instanceof IddError)) failures.push(`${name}: untyped ${(e as Error).message}`);
            await sleep(100);
          }
        }
      };
      /** Until every sequence had an answer with numbers after `since`. */
      const answeredSince = (since: number, what: string) =>
        waitFor(what, async () => names.every((n) => (okAt.get(n) ?? 0) > since), { timeoutMs: 60_000, everyMs: 100 });
      let killed: Awaited<ReturnType<typeof failoverLosingWrites>>["killed"] | undefined;
      const loops: Promise<void>[] = [];
      try {
        await worker.assigned;
        loops.push(...names.flatMap((n) => [loop(n), loop(n)]));
        await answeredSince(0, "first answers");

        // A switchover: the primary is demoted to a replica of the other node (writes to it: READONLY).
        const before = await sentinelRoles(layout);
        const t1 = Date.now();
        await redisCall(layout.ports.sentinels[0] as number, "SENTINEL", "FAILOVER", SENTINEL_MASTER);
        await waitFor("the switchover", async () => (await sentinelRoles(layout)).primary === before.replica, {
          timeoutMs: 30_000,
          everyMs: 200,
        });
        await answeredSince(Date.now(), "answers after the switchover");
        const switchoverMs = Date.now() - t1;

        // A failover that loses what the load wrote while the replica was frozen.
        let t2 = 0;
        const f = await failoverLosingWrites(layout, async () => {
          await sleep(2000);
          t2 = Date.now();
        });
        killed = f.killed;
        await answeredSince(Date.now(), "answers after the failover");
        process.stderr.write(
          `sentinel: answered again ${switchoverMs} ms after SENTINEL FAILOVER, ${Date.now() - t2} ms after the primary was killed; ${issued.length} answers\n`,
        );
      } finally {
        stop = true;
        await Promise.all(loops);
        await client.close();
        await stopWorker(worker);
        if (killed) await restart(layout, killed);
        await new MongoQueries(services.mongodbUrl).dropDatabase().catch(() => {});
      }
      expect(failures).toEqual([]);
      const report = checkHistory(issued);
      expect(report.duplicates).toEqual([]);
      expect(report.orderViolations).toEqual([]);
      expect(issued.length).toBeGreaterThan(names.length * 3);
      expect(worker.log.filter((l) => /"level":(50|60)/.test(l) && !l.includes('"component":"kafkajs"'))).toEqual([]);
    }),
  CLUSTER_TEST_TIMEOUT_MS,
);
