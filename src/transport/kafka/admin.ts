/**
 * The admin requests idd makes: topic metadata for the reply path, a consumer group's view for the
 * status page, and creating and deleting topics.
 */
import type { Admin } from "kafkajs";

import { IddError } from "../../core/errors.js";
import type { KafkaConnection } from "./connection.js";
import { isUnknownTopic } from "./errors.js";
import { loadKafkajs } from "./kafkajs-modules.js";

/** A topic idd creates when it is missing. */
export interface TopicSpec {
  topic: string;
  partitions: number;
  replicationFactor?: number;
  minInsyncReplicas?: number;
  /** Other topic configurations (e.g. max.message.bytes), as the broker names them. */
  configs?: Record<string, string>;
}

/** How many copies of a topic's records the cluster keeps, and how many must have a write before it is acknowledged (acks=all). */
export interface TopicDurability {
  replicationFactor: number;
  minInsyncReplicas: number;
}

/** One partition of a consumer group's topic, as the broker sees it. */
export interface GroupPartition {
  partition: number;
  /** The group member assigned the partition (none while the group rebalances or is empty). */
  owner: { clientId: string; host: string } | null;
  /** The group's committed offset (the next record it will read), null before its first commit. */
  committed: string | null;
  /** The partition's end offset. */
  end: string;
  /** Records not yet answered: end minus committed (minus the start offset before the first commit). */
  lag: number;
}

/** A consumer group's view of one topic. */
export interface GroupView {
  state: string;
  members: number;
  partitions: GroupPartition[];
}

/** An admin kept connected for frequent lookups; a failed call drops it and the next connects afresh. */
export class KeptAdmin {
  readonly #connection: KafkaConnection;
  #kept: Promise<Admin> | undefined;

  constructor(connection: KafkaConnection) {
    this.#connection = connection;
  }

  async use<T>(f: (a: Admin) => Promise<T>): Promise<T> {
    this.#kept ??= (async () => {
      const a = this.#connection.admin();
      await this.#connection.login(a);
      return a;
    })();
    const admin = this.#kept;
    try {
      return await f(await admin);
    } catch (e) {
      if (this.#kept === admin) this.#kept = undefined;
      void admin.then((a) => a.disconnect()).catch(() => {});
      throw e;
    }
  }

  async close(): Promise<void> {
    const admin = this.#kept;
    this.#kept = undefined;
    await (await admin?.catch(() => undefined))?.disconnect();
  }
}

/** How long a created topic may take to have a leader for every partition in the metadata. */
const TOPIC_SETTLE_MS = 30_000;

/** Whether a createTopics failure says only that the topics exist (kafkajs aggregates one error per topic). */
function alreadyExists(e: unknown): boolean {
  const x = e as { type?: string; errors?: unknown[] };
  if (x.type === "TOPIC_ALREADY_EXISTS") return true;
  return Array.isArray(x.errors) && x.errors.length > 0 && x.errors.every(alreadyExists);
}

/** Whether a kafkajs error (or one it wraps) says a partition has no leader yet. */
function leaderless(e: unknown): boolean {
  for (let x = e as { type?: string; cause?: unknown; originalError?: unknown } | undefined; x; ) {
    if (x.type === "LEADER_NOT_AVAILABLE" || x.type === "NOT_LEADER_OR_FOLLOWER") return true;
    x = (x.originalError ?? x.cause) as typeof x;
  }
  return false;
}

/** Whether a kafkajs error (or one it wraps) says a broker could not be reached. */
function unreachable(e: unknown): boolean {
  for (let x = e as { name?: string; cause?: unknown; originalError?: unknown } | undefined; x; ) {
    if (x.name === "KafkaJSConnectionError" || x.name === "KafkaJSRequestTimeoutError") return true;
    x = (x.originalError ?? x.cause) as typeof x;
  }
  return false;
}

/**
 * Runs `attempt` until it gives a value, for up to `settleMs`: a string from it ("not yet: …"), an
 * unknown topic or a missing leader are waited out. On a cluster a broker learns of a new topic a
 * moment after the controller, so a topic just created (here or by a worker starting beside this
 * one) can be unknown to the broker a request reaches.
 */
export async function whenServed<T>(topics: string[], settleMs: number, attempt: () => Promise<T | string>): Promise<T> {
  const deadline = Date.now() + settleMs;
  for (let pause = 50; ; pause = Math.min(pause * 2, 1000)) {
    let why: string;
    try {
      const r = await attempt();
      if (typeof r !== "string") return r;
      why = r;
    } catch (e) {
      if (!isUnknownTopic(e) && !leaderless(e)) throw e;
      why = (e as Error).message;
    }
    if (Date.now() >= deadline)
      throw new IddError("KAFKA_UNAVAILABLE", `topics ${topics.join(", ")} exist, but are not served after ${settleMs} ms: ${why}`);
    await new Promise((r) => setTimeout(r, pause));
  }
}

/** True when every partition of `topics` has a leader in the metadata `a` reads, else why not. */
async function led(a: Admin, topics: string[]): Promise<true | string> {
  const meta = await a.fetchTopicMetadata({ topics });
  const without = meta.topics.filter((t) => t.partitions.length === 0 || t.partitions.some((p) => p.leader < 0));
  if (without.length === 0 && meta.topics.length === topics.length) return true;
  return `no leader yet for ${without.map((t) => t.name).join(", ") || "some topics"}`;
}

export class KafkaAdmin {
  readonly #connection: KafkaConnection;
  /**
   * Two kept admins: the reply path's metadata (asked at most once a second) and the status page's
   * group view, so that a status call failing cannot disconnect a reply-path lookup.
   */
  readonly #metadata: KeptAdmin;
  readonly #group: KeptAdmin;

  constructor(connection: KafkaConnection) {
    this.#connection = connection;
    this.#metadata = new KeptAdmin(connection);
    this.#group = new KeptAdmin(connection);
  }

  /** Runs `f` on an admin connected for it alone (to `broker` alone when given). */
  async #once<T>(f: (a: Admin) => Promise<T>, broker?: string): Promise<T> {
    const admin = broker === undefined ? this.#connection.admin() : this.#connection.adminAt(broker);
    await this.#connection.login(admin);
    try {
      return await f(admin);
    } finally {
      await admin.disconnect();
    }
  }

  topicPartitions(): Promise<Map<string, number>> {
    return this.#metadata.use(async (a) => {
      const { topics } = await a.fetchTopicMetadata();
      return new Map(topics.map((t) => [t.name, t.partitions.length]));
    });
  }

  partitionCount(topic: string): Promise<number | undefined> {
    return this.#metadata.use(async (a) => {
      try {
        const { topics } = await a.fetchTopicMetadata({ topics: [topic] });
        return topics[0]?.partitions.length;
      } catch (e) {
        if (isUnknownTopic(e)) return undefined;
        throw e;
      }
    });
  }

  groupPartitions(groupId: string, topic: string): Promise<GroupView> {
    return this.#group.use(async (a) => {
      const [groups, committed, ends] = await Promise.all([
        a.describeGroups([groupId]),
        a.fetchOffsets({ groupId, topics: [topic] }),
        a.fetchTopicOffsets(topic),
      ]);
      const group = groups.groups[0];
      const owners = new Map<number, { clientId: string; host: string }>();
      for (const m of group?.members ?? []) {
        // An empty assignment (a member that joined and has not been given partitions yet) decodes to null.
        const assignment =
          m.memberAssignment.length > 0 ? loadKafkajs().AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null;
        for (const p of assignment?.assignment[topic] ?? []) owners.set(p, { clientId: m.clientId, host: m.clientHost });
      }
      const offsets = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, p.offset]));
      const partitions = ends
        .map((e) => {
          const c = offsets.get(e.partition);
          const from = c === undefined || Number(c) < 0 ? null : c;
          return {
            partition: e.partition,
            owner: owners.get(e.partition) ?? null,
            committed: from,
            end: e.high,
            lag: Math.max(0, Number(e.high) - Number(from ?? e.low)),
          };
        })
        .sort((x, y) => x.partition - y.partition);
      return { state: group?.state ?? "Unknown", members: group?.members.length ?? 0, partitions };
    });
  }

  /** Every topic name of the cluster (an admin connected for this call alone). */
  listTopics(): Promise<string[]> {
    return this.#once((a) => a.listTopics());
  }

  /**
   * Creates the topics that do not exist, with `replicationFactor` and `min.insync.replicas` when
   * given (else the broker's defaults); topics that exist are left as they are. Resolves once every
   * partition of all of them has a leader in the metadata this client reads: on a cluster, a broker
   * learns of a new topic a moment after the controller, and workers starting together race to
   * create the same topics (one wins, the others find them existing, maybe not served yet).
   */
  async ensureTopics(topics: TopicSpec[], settleMs = TOPIC_SETTLE_MS): Promise<void> {
    await this.#once(async (a) => {
      const existing = new Set(await a.listTopics());
      const missing = topics.filter((t) => !existing.has(t.topic));
      if (missing.length > 0)
        await a
          .createTopics({
            // kafkajs's own wait asks one broker and fails when it does not host the topic yet
            // ("This server does not host this topic-partition"): untilServed below waits instead.
            waitForLeaders: false,
            topics: missing.map((t) => ({
              topic: t.topic,
              numPartitions: t.partitions,
              ...(t.replicationFactor !== undefined && { replicationFactor: t.replicationFactor }),
              configEntries: [
                ...Object.entries(t.configs ?? {}).map(([name, value]) => ({ name, value })),
                ...(t.minInsyncReplicas === undefined ? [] : [{ name: "min.insync.replicas", value: String(t.minInsyncReplicas) }]),
              ],
            })),
          })
          .catch((e: unknown) => {
            if (!alreadyExists(e)) throw e; // created meanwhile by another process
          });
    });
    await this.untilServed(
      topics.map((t) => t.topic),
      settleMs,
    );
  }

  /**
   * Resolves once every partition of `topics` has a leader in the metadata of every broker of the
   * cluster, each asked on a connection of its own: a client's next request (metadata, offsets,
   * configs) may reach any of them, and on a fresh cluster one broker can serve a topic while
   * another still answers "does not host this topic-partition". A broker that cannot be reached is
   * left out (a request to it fails anyway, as a connection error a client retries).
   */
  untilServed(topics: string[], settleMs = TOPIC_SETTLE_MS): Promise<void> {
    return whenServed(topics, settleMs, async () => {
      const { brokers } = await this.#once((a) => a.describeCluster());
      for (const b of brokers) {
        const why = await this.#once((a) => led(a, topics), `${b.host}:${b.port}`).catch((e: unknown) => {
          if (unreachable(e)) return true;
          throw e;
        });
        if (why !== true) return `broker ${b.nodeId}: ${why}`;
      }
      return undefined;
    });
  }

  /** How many brokers the cluster has (one metadata request). */
  brokerCount(): Promise<number> {
    return this.#metadata.use(async (a) => (await a.describeCluster()).brokers.length);
  }

  /** A topic's durability as the cluster has it: the fewest replicas of any partition, and min.insync.replicas. */
  topicDurability(topic: string): Promise<TopicDurability> {
    // Asked right after ensureTopics: the broker it reaches may not know a new topic yet.
    return whenServed([topic], TOPIC_SETTLE_MS, () =>
      this.#metadata.use(async (a) => {
        const { topics } = await a.fetchTopicMetadata({ topics: [topic] });
        const replicas = Math.min(...(topics[0]?.partitions ?? []).map((p) => p.replicas.length));
        const { resources } = await a.describeConfigs({
          resources: [{ type: loadKafkajs().ConfigResourceTypes.TOPIC, name: topic, configNames: ["min.insync.replicas"] }],
          includeSynonyms: false,
        });
        const value = resources[0]?.configEntries.find((c) => c.configName === "min.insync.replicas")?.configValue;
        return { replicationFactor: replicas, minInsyncReplicas: Number(value ?? 1) };
      }),
    );
  }

  deleteTopics(topics: string[]): Promise<void> {
    return this.#once((a) => a.deleteTopics({ topics }));
  }

  /** Disconnects the metadata admin (a producer's close does, as before the split). */
  closeMetadata(): Promise<void> {
    return this.#metadata.close();
  }

  /** Disconnects both kept admins. */
  async close(): Promise<void> {
    await Promise.all([this.#metadata.close(), this.#group.close()]);
  }
}
