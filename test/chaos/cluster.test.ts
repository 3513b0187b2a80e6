/**
 * The cluster chaos profile (profiles.ts: `cluster`; harness.ts) as a test, on the cluster profile's
 * services that withCluster shares with the other cluster tests of the run, and the run's MongoDB and
 * registry (a database of its own): under load from clients half on librdkafka's default
 * partitioner, the leader broker of the busiest request partition killed, a Sentinel failover to a
 * replica that missed writes, the pool moved to the Redis Cluster and a shard primary killed there —
 * and still no duplicate, no order violation, every request answered with numbers or a typed code,
 * every skipped number explained, every fault recovered from without an operator step.
 */
import { expect, inject, test } from "vitest";
import { withCluster } from "../support/cluster-stack.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { ownDatabase } from "../support/workers.js";
import { runChaos } from "./harness.js";
import { formatReport } from "./report.js";

const services = inject("services");

test(
  "cluster chaos profile: a broker, the Sentinel primary and a Redis Cluster primary killed; no duplicate, order kept, every request accounted for, every fault recovered",
  () =>
    withCluster(async ({ layout, env }) => {
      const own = ownDatabase(services, "chaos_cluster");
      try {
        const r = await runChaos({
          profile: "cluster",
          cluster: { layout, env, mongodbUrl: own.mongodbUrl, schemaRegistryUrl: own.schemaRegistryUrl },
        });
        process.stderr.write(formatReport(r));
        expect(r.duplicates).toEqual([]);
        expect(r.orderViolations).toEqual([]);
        expect(r.gapViolations).toEqual([]); // every skipped number explained by MongoDB's audit log (G4)
        expect(r.counters.every((c) => c.ungranted || c.gaps !== undefined)).toBe(true);
        expect(r.unaccounted).toEqual([]);
        expect(r.ok + r.typedErrors).toBe(r.requests);
        expect(r.unhandledRejections).toEqual([]);
        expect(r.unexpectedExits).toEqual([]);
        expect(r.zombies).toEqual([]);
        expect(r.unrecovered).toEqual([]);
        expect(r.notRun).toEqual([]);
        expect(r.phases.map((p) => p.kind)).toEqual(["warmup", "kafka-leader", "sentinel-failover", "redis-cluster", "cluster-failover"]);
        // Each fault's sequences answered again while the failed node was still down (the notes say when).
        for (const p of r.phases.filter((x) => x.kind !== "warmup" && x.kind !== "redis-cluster"))
          expect(
            p.notes.some((n) => n.startsWith("every sequence answered")),
            p.name,
          ).toBe(true);
        expect(r.numbers).toBeGreaterThan(0);
        expect(r.failures).toEqual([]);
      } finally {
        await new MongoQueries(own.mongodbUrl).dropDatabase().catch(() => {});
      }
    }),
  420_000,
);
