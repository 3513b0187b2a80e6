/**
 * A topic of the cluster that no one here uses, with its only copy on a broker that is down: its
 * partition has no leader. kafkajs used to fail every request for all topics on it (the one a
 * client makes when it connects before naming a topic), so no worker started and no client
 * connected (all-topics-metadata.ts). On the cluster profile's three brokers.
 */
// The seam first, as a worker loads it: kafkajs is loaded through it.
import "../../src/transport/kafka/index.js";
import { randomUUID } from "node:crypto";
import { pino } from "pino";
import { expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import { loadConfig } from "../../src/config/config.js";
import { Worker } from "../../src/worker/worker.js";
import { kafkaNode, killKafkaNode, restart } from "../../stack/faults.js";
import { ServedAdmin } from "../../stack/kafka-admin.js";
import { CLUSTER_TEST_TIMEOUT_MS, withCluster } from "../support/cluster-stack.js";
import { ownDatabase } from "../support/workers.js";

const services = ownDatabase(inject("services"), "leaderless");

test(
  "a one-copy topic on a broker that is down keeps no worker from starting and no client from asking",
  () =>
    withCluster(async ({ layout, kafkaBrokers }) => {
      const run = randomUUID().slice(0, 8);
      const lonely = `lonely.${run}`;
      const requests = `leaderless.${run}.requests`;
      const admin = new ServedAdmin(kafkaBrokers);
      let worker: Worker | undefined;
      let client: IdClient | undefined;
      let down = false;
      try {
        await admin.createTopicOn(lonely, 3);
        await killKafkaNode(layout, 3);
        down = true;
        // The case: the cluster lists the topic, its partition without a leader.
        const all = await admin.allTopicsMetadata();
        expect(all.find((t) => t.name === lonely)?.partitions[0]).toMatchObject({ leader: -1 });

        const config = loadConfig(
          {
            IDD_REQUEST_TOPIC: requests,
            IDD_DLQ_TOPIC: `leaderless.${run}.dlq`,
            IDD_GROUP_ID: `leaderless-${run}`,
            IDD_REQUEST_PARTITIONS: "2",
            IDD_WORKER_ID: `leaderless-${run}`,
            IDD_AUTO_CREATE_SEQUENCES: "true",
          },
          { ...services, kafkaBrokers },
        );
        worker = await Worker.start({ config, logger: pino({ level: "silent" }) });
        client = await IdClient.connect({ brokers: kafkaBrokers, requestTopic: requests, timeoutMs: 30_000 });
        const got = [];
        for (const s of ["a", "b", "c"]) got.push((await client.next(`leaderless-${run}-${s}`, 2)).ranges);
        expect(got).toEqual([[{ first: 1n, last: 2n }], [{ first: 1n, last: 2n }], [{ first: 1n, last: 2n }]]);
      } finally {
        await client?.close({ deleteReplyTopic: true });
        await worker?.stop();
        if (down) await restart(layout, kafkaNode(3));
        await admin.deleteTopics([lonely, requests, `leaderless.${run}.dlq`]).catch(() => {});
        await admin.close();
      }
    }),
  CLUSTER_TEST_TIMEOUT_MS,
);
