/**
 * The stack's cluster profile (stack/cluster.ts) comes up and answers as the real thing would, and
 * its fault helpers (stack/faults.ts) do what they say: a Sentinel failover that promotes a replica
 * which missed writes, a Redis Cluster shard primary killed and taken over by its replica.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { Cluster, Redis } from "ioredis";
import { expect, test } from "vitest";
import { clusterInfo, SENTINEL_MASTER, sentinelMasterPort } from "../../stack/cluster.js";
import { parseEnvFile } from "../../stack/env-file.js";
import { clusterSlotOwner, failoverLosingWrites, kafkaBrokers, killClusterPrimary, restart } from "../../stack/faults.js";
import { clusterEnvFile } from "../../stack/paths.js";
import { redisCall, redisInfo } from "../../stack/redis.js";
import { CLUSTER_TEST_TIMEOUT_MS, withCluster } from "../support/cluster-stack.js";
import { waitFor } from "../support/wait.js";

const run = randomUUID().slice(0, 8);

test(
  "the cluster profile answers: 3 brokers in the metadata, the Sentinels name a primary, the Redis Cluster serves all 16384 slots; cluster.env says where",
  () =>
    withCluster(async ({ layout, env }) => {
      expect(await kafkaBrokers(layout)).toEqual([1, 2, 3]);
      const host = (ports: readonly number[]) => ports.map((p) => `127.0.0.1:${p}`).join(",");
      expect(parseEnvFile(readFileSync(clusterEnvFile(layout), "utf8"))).toEqual({
        KAFKA_BROKERS: host(layout.ports.kafkaNodes),
        REDIS_SENTINELS: host(layout.ports.sentinels),
        REDIS_SENTINEL_MASTER: SENTINEL_MASTER,
        REDIS_CLUSTER_NODES: host(layout.ports.redisClusterNodes),
      });
      expect(env.REDIS_SENTINEL_MASTER).toBe("idd");

      // Every Sentinel names the same primary, which says it is one and has the other node as replica.
      const named = await Promise.all(
        layout.ports.sentinels.map(async (p) =>
          Number(((await redisCall(p, "SENTINEL", "get-master-addr-by-name", "idd")) as string[])[1]),
        ),
      );
      expect(new Set(named).size).toBe(1);
      const primary = named[0] as number;
      expect([layout.ports.redisPrimary, layout.ports.redisReplica]).toContain(primary);
      const replication = await redisInfo(primary, "replication");
      expect(replication.role).toBe("master");
      expect(replication.connected_slaves).toBe("1");

      for (const port of layout.ports.redisClusterNodes) {
        expect(await clusterInfo(port)).toMatchObject({
          cluster_state: "ok",
          cluster_slots_assigned: "16384",
          cluster_slots_ok: "16384",
          cluster_known_nodes: "6",
          cluster_size: "3",
        });
      }
      // And a cluster client writes and reads through it.
      const cluster = new Cluster(layout.ports.redisClusterNodes.map((port) => ({ host: "127.0.0.1", port })));
      try {
        const keys = Array.from({ length: 30 }, (_, i) => `stack-test:${run}:${i}`);
        for (const k of keys) await cluster.set(k, k, "EX", 600);
        expect(await Promise.all(keys.map((k) => cluster.get(k)))).toEqual(keys);
      } finally {
        cluster.disconnect();
      }
    }),
  CLUSTER_TEST_TIMEOUT_MS,
);

test(
  "a Sentinel failover promotes the replica: writes it missed are gone, earlier ones kept; the old primary comes back as a replica",
  () =>
    withCluster(async ({ layout }) => {
      const kept = `stack-test:${run}:kept`;
      const lost = `stack-test:${run}:lost`;
      const before = (await sentinelMasterPort(layout)) as number;
      const primary = new Redis({ host: "127.0.0.1", port: before, maxRetriesPerRequest: 1 });
      try {
        await primary.set(kept, "1", "EX", 600);
        expect(await primary.wait(1, 5000)).toBe(1); // on the replica too
      } finally {
        primary.disconnect();
      }

      const f = await failoverLosingWrites(layout, async (port) => {
        const r = new Redis({ host: "127.0.0.1", port, maxRetriesPerRequest: 1 });
        try {
          await r.set(lost, "1", "EX", 600);
          expect(await r.wait(1, 200)).toBe(0); // no replica got it
        } finally {
          r.disconnect();
        }
      });
      expect(f.oldPrimary).toBe(before);
      expect(f.newPrimary).not.toBe(before);
      for (const p of layout.ports.sentinels)
        expect(((await redisCall(p, "SENTINEL", "get-master-addr-by-name", "idd")) as string[])[1]).toBe(String(f.newPrimary));
      const promoted = new Redis({ host: "127.0.0.1", port: f.newPrimary, maxRetriesPerRequest: 1 });
      try {
        expect(await promoted.get(kept)).toBe("1");
        expect(await promoted.get(lost)).toBeNull();
      } finally {
        promoted.disconnect();
      }

      // The Sentinels turn the old primary, started again empty, into the new one's replica.
      await restart(layout, f.killed);
      const back = await waitFor(
        "the old primary to replicate the new one",
        async () => {
          const info = await redisInfo(f.oldPrimary, "replication");
          return info.role === "slave" && info.master_link_status === "up" && info;
        },
        { timeoutMs: 60_000, everyMs: 500 },
      );
      expect(back.master_port).toBe(String(f.newPrimary));
    }),
  CLUSTER_TEST_TIMEOUT_MS,
);

test(
  "a Redis Cluster shard primary killed: its replica serves the shard with the data it had, and the old primary returns as a replica",
  () =>
    withCluster(async ({ layout }) => {
      const key = `stack-test:${run}:shard`;
      const slot = Number(await redisCall(layout.ports.redisClusterNodes[0] as number, "CLUSTER", "KEYSLOT", key));
      const owner = (await clusterSlotOwner(layout, slot)) as number;
      const direct = new Redis({ host: "127.0.0.1", port: owner, maxRetriesPerRequest: 1 });
      try {
        await direct.set(key, "v", "EX", 600);
        expect(await direct.wait(1, 5000)).toBe(1);
      } finally {
        direct.disconnect();
      }

      const f = await killClusterPrimary(layout, slot);
      expect(f.oldPort).toBe(owner);
      expect(f.newPort).not.toBe(owner);
      const promoted = new Redis({ host: "127.0.0.1", port: f.newPort, maxRetriesPerRequest: 1 });
      try {
        expect(await promoted.get(key)).toBe("v");
      } finally {
        promoted.disconnect();
      }

      await restart(layout, f.killed); // waits until every node says the cluster is ok again
      await waitFor("the old primary to replicate", async () => (await redisInfo(f.oldPort, "replication")).role === "slave", {
        timeoutMs: 60_000,
        everyMs: 500,
      });
      for (const port of layout.ports.redisClusterNodes) expect((await clusterInfo(port)).cluster_state).toBe("ok");
    }),
  CLUSTER_TEST_TIMEOUT_MS,
);
