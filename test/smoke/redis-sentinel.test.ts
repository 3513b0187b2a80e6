import { Redis } from "ioredis";
import { expect, test } from "vitest";
import { redisTopologyFromEnv } from "../../src/config/redis-topology.js";
import { createRedis } from "../../src/redis/client.js";
import { CLUSTER_TEST_TIMEOUT_MS, withCluster } from "../support/cluster-stack.js";
import { sleep, waitFor } from "../support/wait.js";

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
