/**
 * Reading a topic as a member of a consumer group: a façade over the kafkajs member in force, the
 * offsets committed in order per partition (commit-queue.ts) and, when kafkajs gives a member up for
 * good, a fresh member joined with backoff (rejoin.ts). While a batch is handled, the consumer
 * itself heartbeats every `heartbeatMs`, so no wait inside a batch (Redis, MongoDB, a retry loop)
 * can starve the heartbeat; and it tells the batch whether the group still vouches for this member
 * (membership.ts).
 */
import type { EachBatchPayload, Consumer as KConsumer } from "kafkajs";
import type { Logger } from "pino";
import { IddError } from "../../core/errors.js";
import { CommitQueue, type PartitionOffset } from "./commit-queue.js";
import type { KafkaConnection } from "./connection.js";
import { refusedSetting, selfHealingState } from "./errors.js";
import { commitThrough, type GroupHandle, roundRobinFor } from "./kafkajs-modules.js";
import { Membership } from "./membership.js";
import type { Batch, BatchContext, InRecord } from "./records.js";
import { rejoinWithBackoff } from "./rejoin.js";

export interface ConsumerOptions {
  groupId: string;
  topic: string;
  fromBeginning?: boolean;
  sessionTimeoutMs?: number;
  heartbeatMs?: number;
  /** How many partitions are processed at once (each one in order). */
  concurrency?: number;
  /**
   * How old the consumer's topic metadata may get: partitions added to `topic` are read (the group
   * rebalances) within about this long.
   */
  metadataMaxAgeMs?: number;
  /**
   * Per partition, at most one offset commit per this many ms (0: one per step, as soon as the one
   * in flight returns); a rebalance starting or the consumer closing sends the waiting ones at once.
   */
  commitIntervalMs?: number;
  /** Fetch limits: what one fetch may bring per partition and in all (bounds memory under a backlog). */
  maxBytesPerPartition?: number;
  maxBytes?: number;
  onBatch(batch: Batch, ctx: BatchContext): Promise<void>;
  /**
   * Called after every (re)join with the partitions of `topic` now assigned to this member; after an
   * expulsion (a new member id), first with none: everything held before may have had other owners.
   */
  onAssigned?(partitions: number[]): void;
  /**
   * Called when the consumer crashed (kafkajs restarts it, or a new member joins). `selfHealing`:
   * what a broker state kafkajs waits out by itself says (coordinator loading, a rebalance, a
   * leader moving), in idd's words, when that is why (kafkajs restarts the consumer, or a new
   * member joins: either way it comes back by itself).
   */
  onCrash?(error: Error, selfHealing?: string): void;
  /**
   * Called once when the brokers refuse a setting for good (CONFIG_INVALID, e.g. a session timeout
   * outside their range): the consumer has stopped and will not rejoin.
   */
  onRefused?(error: IddError): void;
}

export interface Consumer {
  /** Stops fetching, waits for the batch in flight, leaves the group. */
  close(): Promise<void>;
}

export class KafkaConsumer implements Consumer {
  readonly #connection: KafkaConnection;
  readonly #options: ConsumerOptions;
  readonly #logger: Logger | undefined;
  readonly #commits: CommitQueue;
  readonly #membership: Membership;
  /** The group member in force (a new one after a crash for good). */
  #member: KConsumer;
  /** Each member's kafkajs group, once it joined. */
  readonly #groups = new WeakMap<KConsumer, GroupHandle>();
  #closed = false;

  private constructor(connection: KafkaConnection, options: ConsumerOptions, logger: Logger | undefined) {
    this.#connection = connection;
    this.#options = options;
    this.#logger = logger;
    this.#commits = new CommitQueue((fields, message) => logger?.warn(fields, message), options.commitIntervalMs ?? 0);
    this.#membership = new Membership(options.sessionTimeoutMs ?? 10_000);
    this.#member = this.#newMember();
  }

  /** A consumer whose member has joined the group and runs. */
  static async start(connection: KafkaConnection, options: ConsumerOptions, logger?: Logger): Promise<KafkaConsumer> {
    const consumer = new KafkaConsumer(connection, options, logger);
    await consumer.#join(consumer.#member);
    return consumer;
  }

  #newMember(): KConsumer {
    const o = this.#options;
    const group: GroupHandle = { beforeJoin: () => this.#beforeJoin() };
    const member = this.#connection.consumer({
      groupId: o.groupId,
      sessionTimeout: o.sessionTimeoutMs ?? 10_000,
      heartbeatInterval: o.heartbeatMs ?? 1000,
      allowAutoTopicCreation: false,
      maxWaitTimeInMs: 100,
      partitionAssigners: [roundRobinFor(group)],
      ...(o.metadataMaxAgeMs && { metadataMaxAge: o.metadataMaxAgeMs }),
      ...(o.maxBytesPerPartition && { maxBytesPerPartition: o.maxBytesPerPartition }),
      ...(o.maxBytes && { maxBytes: o.maxBytes }),
    });
    this.#groups.set(member, group);
    return member;
  }

  /**
   * Before kafkajs (re)joins the group or leaves it: the offsets of what was answered are
   * committed while this member's generation is still the group's, so that the partitions' next
   * owners do not answer those records again. Bounded by the lease: past it the coordinator may
   * expel this member, and a join later than that costs more than a reply sent twice (the same
   * numbers, G6).
   */
  async #beforeJoin(): Promise<void> {
    const within = this.#membership.leaseMs;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((r) => {
      timer = setTimeout(() => r("late"), within);
    });
    try {
      if ((await Promise.race([this.#commits.drained(), late])) === "late")
        this.#logger?.warn({ waitedMs: within }, "offset commits still out at a rebalance or stop: going on without them");
    } finally {
      clearTimeout(timer);
    }
  }

  /** Connects `member`, subscribes it and runs it: resolves once it is in the group. */
  async #join(member: KConsumer): Promise<void> {
    const o = this.#options;
    // First: a join as a new member drops everything before the new assignment is taken.
    this.#membership.follow(member, (fresh) => {
      if (!fresh) return;
      this.#logger?.warn("rejoined the group as a new member: every partition is taken anew (new gens, blocks dropped)");
      o.onAssigned?.([]);
    });
    member.on(member.events.GROUP_JOIN, (e) => o.onAssigned?.(e.payload.memberAssignment[o.topic] ?? []));
    // The partitions may move: the offsets answered so far are committed now, while this member's
    // generation is still the group's, so that the next owner does not answer them again.
    member.on(member.events.REBALANCING, () => this.#commits.flush());
    // kafkajs gives up on some errors for good (e.g. "the coordinator is not aware of this member"
    // after the process was paused past its session timeout) and leaves the process alive but out
    // of the group. Start a fresh member instead: it joins, and its assignment says what was lost.
    member.on(member.events.CRASH, (e) => {
      const refused = refusedSetting(e.payload.error, { sessionTimeoutMs: o.sessionTimeoutMs ?? 10_000 });
      if (refused) {
        if (this.#closed) return;
        this.#closed = true;
        void member.disconnect().catch(() => {});
        o.onRefused?.(new IddError("CONFIG_INVALID", refused, { cause: e.payload.error }));
        return;
      }
      if (!this.#closed) o.onCrash?.(e.payload.error, selfHealingState(e.payload.error));
      if (e.payload.restart || this.#closed) return;
      this.#logger?.warn({ err: e.payload.error?.message }, "Kafka consumer crashed for good: rejoining as a new member");
      o.onAssigned?.([]);
      void this.#rejoin(member);
    });
    await this.#connection.login(member);
    await member.subscribe({ topic: o.topic, fromBeginning: o.fromBeginning ?? true });
    await member.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: o.concurrency ?? 4,
      eachBatch: (payload) => this.#eachBatch(member, payload),
    });
  }

  /** Replaces `crashed` with a fresh member, trying with backoff until it is in or the consumer is closed. */
  async #rejoin(crashed: KConsumer): Promise<void> {
    await crashed.disconnect().catch(() => {});
    await rejoinWithBackoff({
      isClosed: () => this.#closed,
      join: async () => {
        this.#member = this.#newMember();
        await this.#join(this.#member);
      },
      failed: async (err, attempt, retryInMs) => {
        this.#logger?.warn({ err: (err as Error).message, attempt, retryInMs }, "rejoining failed; trying again");
        await this.#member.disconnect().catch(() => {});
      },
    });
  }

  async #eachBatch(member: KConsumer, { batch, heartbeat, isRunning, isStale, resolveOffset }: EachBatchPayload): Promise<void> {
    if (batch.messages.length === 0) return;
    // kafkajs's messages are InRecords once every one has its headers (records of old formats have
    // none): handed on as they are, not copied.
    for (const m of batch.messages) m.headers ??= {};
    // The consumer's own pace: a heartbeat every heartbeatMs whatever the batch waits on. One that
    // fails (a rebalance, an expulsion) stops the batch: the next explicit heartbeat throws it, as
    // kafkajs's own would, and kafkajs rejoins.
    let failed: unknown;
    // Through the group itself: kafkajs's member drops commits once it began to stop (kafkajs-modules.ts).
    const handle = this.#groups.get(member);
    const commit = (offsets: PartitionOffset[]) => (handle?.group ? commitThrough(handle.group, offsets) : member.commitOffsets(offsets));
    const pacer = setInterval(() => {
      heartbeat().catch((e: unknown) => {
        failed ??= e;
      });
    }, this.#options.heartbeatMs ?? 1000);
    try {
      await this.#options.onBatch(
        {
          topic: batch.topic,
          partition: batch.partition,
          highWatermark: batch.highWatermark,
          records: batch.messages as InRecord[],
        },
        {
          heartbeat: async () => {
            if (failed !== undefined) throw failed;
            await heartbeat();
          },
          isRunning: () => failed === undefined && isRunning() && !isStale(),
          proven: () => failed === undefined && this.#membership.proven(),
          commit: (offset) => {
            resolveOffset((BigInt(offset) - 1n).toString());
            this.#commits.add(batch.topic, batch.partition, offset, commit);
          },
        },
      );
    } finally {
      clearInterval(pacer);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#member.stop();
    await this.#commits.drained();
    await this.#member.disconnect();
  }
}
