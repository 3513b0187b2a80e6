/**
 * The one Kafka admin of the tests, the bench, the chaos harness and the stack: every topic, group
 * and metadata question they ask a cluster goes through here, and every answer about a topic waits
 * first until each broker serves every partition of it (the seam's `untilServed`, the wait idd's
 * workers make in `ensureTopics`). On a fresh 3-broker cluster one broker can know a topic while
 * another still answers "This server does not host this topic-partition", and kafkajs's admin
 * asks whichever broker it is connected to. test/architecture/kafka-admin.test.ts fails when a file
 * of test/ or stack/ makes a kafkajs admin of its own.
 */
import type { Admin, ITopicMetadata } from "kafkajs";
import { KafkaAdmin, KeptAdmin, type TopicSpec } from "../src/transport/kafka/admin.js";
import { KafkaConnection } from "../src/transport/kafka/connection.js";
import { loadKafkajs } from "../src/transport/kafka/kafkajs-modules.js";

/**
 * kafkajs through idd's one way of loading it, never imported first: `idd start` and `idd worker`
 * load this file (the local stack) before they make their own clients, and a kafkajs loaded
 * without idd's modules stays so for the whole process.
 */
const { AssignerProtocol, ConfigResourceTypes } = loadKafkajs();

export type { TopicSpec } from "../src/transport/kafka/admin.js";

/** A group as describeGroups reads it, with each member's assignment decoded. */
export interface GroupMembers {
  state: string;
  /** Member client id → topic → partitions. */
  members: { clientId: string; assignment: Record<string, number[]> }[];
}

export class ServedAdmin {
  readonly #connection: KafkaConnection;
  readonly #seam: KafkaAdmin;
  /** The admin kept for the questions the seam has no method for. */
  readonly #raw: KeptAdmin;

  constructor(brokers: string[], clientId = "idd-test-admin") {
    this.#connection = new KafkaConnection({ brokers, clientId });
    this.#seam = new KafkaAdmin(this.#connection);
    this.#raw = new KeptAdmin(this.#connection);
  }

  #use<T>(f: (a: Admin) => Promise<T>): Promise<T> {
    return this.#raw.use(f);
  }

  /** Creates the topics that do not exist and resolves once every broker serves all of them. */
  createTopics(topics: TopicSpec[]): Promise<void> {
    return this.#seam.ensureTopics(topics);
  }

  /** Creates one single-partition topic whose only copy is on broker `brokerId`, once every broker serves it. */
  async createTopicOn(topic: string, brokerId: number): Promise<void> {
    await this.#use((a) => a.createTopics({ topics: [{ topic, replicaAssignment: [{ partition: 0, replicas: [brokerId] }] }] }));
    await this.served([topic]);
  }

  /** Every topic's metadata as one broker has it now (leaderless partitions too: leader -1), without waiting. */
  allTopicsMetadata(): Promise<ITopicMetadata[]> {
    return this.#use(async (a) => (await a.fetchTopicMetadata()).topics);
  }

  /** Resolves once every partition of `topics` has a leader on every broker. */
  served(topics: string[], settleMs?: number): Promise<void> {
    return this.#seam.untilServed(topics, settleMs);
  }

  /** Grows `topic` to `count` partitions and resolves once every broker serves them all. */
  async addPartitions(topic: string, count: number): Promise<void> {
    await this.#use((a) => a.createPartitions({ topicPartitions: [{ topic, count }] }));
    await this.served([topic]);
  }

  /** The topics' metadata (partitions, leaders, replicas), once every broker serves them. */
  async topicMetadata(topics: string[], settleMs?: number): Promise<ITopicMetadata[]> {
    await this.served(topics, settleMs);
    return this.#use(async (a) => (await a.fetchTopicMetadata({ topics })).topics);
  }

  /** One topic configuration (e.g. min.insync.replicas) of each of `topics`, in their order. */
  async topicConfig(topics: string[], name: string): Promise<(string | undefined)[]> {
    await this.served(topics);
    const { resources } = await this.#use((a) =>
      a.describeConfigs({
        resources: topics.map((t) => ({ type: ConfigResourceTypes.TOPIC, name: t, configNames: [name] })),
        includeSynonyms: false,
      }),
    );
    return topics.map((t) => resources.find((r) => r.resourceName === t)?.configEntries.find((c) => c.configName === name)?.configValue);
  }

  /** Every partition's low and high offsets, once every broker serves the topic. */
  async topicOffsets(topic: string): Promise<{ partition: number; offset: string; low: string; high: string }[]> {
    await this.served([topic]);
    return this.#use((a) => a.fetchTopicOffsets(topic));
  }

  /** A group's committed offsets on `topic` ("-1" where it has none). */
  async groupOffsets(groupId: string, topic: string): Promise<{ partition: number; offset: string }[]> {
    const [committed] = await this.#use((a) => a.fetchOffsets({ groupId, topics: [topic] }));
    return committed?.partitions ?? [];
  }

  /** A group's state and its members' assignments; undefined when the broker does not know it. */
  async group(groupId: string): Promise<GroupMembers | undefined> {
    const { groups } = await this.#use((a) => a.describeGroups([groupId]));
    const g = groups[0];
    if (!g) return undefined;
    return {
      state: g.state,
      members: g.members.map((m) => ({
        clientId: m.clientId,
        assignment: m.memberAssignment.length > 0 ? (AssignerProtocol.MemberAssignment.decode(m.memberAssignment)?.assignment ?? {}) : {},
      })),
    };
  }

  /**
   * The broker ids `broker` lists once it knows a controller; undefined when it does not answer
   * (one try, one second: a readiness probe).
   */
  static async brokerIds(broker: string): Promise<number[] | undefined> {
    const admin = new KafkaConnection({ brokers: [broker], clientId: "idd-stack-probe" }).adminAt(broker);
    try {
      await admin.connect();
      const cluster = await admin.describeCluster();
      return cluster.controller === null ? undefined : cluster.brokers.map((b) => b.nodeId).sort();
    } catch {
      return undefined;
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  /** The ids of the cluster's brokers, and its controller's (null while it has none). */
  cluster(): Promise<{ brokers: number[]; controller: number | null }> {
    return this.#use(async (a) => {
      const c = await a.describeCluster();
      return { brokers: c.brokers.map((b) => b.nodeId).sort(), controller: c.controller };
    });
  }

  /** Deletes the topics; topics already gone (or a broker that does not answer) are no failure. */
  deleteTopics(topics: string[]): Promise<void> {
    return this.#seam.deleteTopics(topics).catch(() => {});
  }

  async close(): Promise<void> {
    await this.#raw.close();
    await this.#seam.close();
  }
}
