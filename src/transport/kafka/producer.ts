/**
 * Sending records with a kafkajs producer, which this class renews when kafkajs's metadata has gone
 * wrong: a topic deleted since it was last sent to (kafkajs keeps every topic it ever sent to in its
 * metadata requests, so every later send fails: kafkajs #1622), or a partition kafkajs does not know
 * yet. Both sends renew through one path, after a failed send or, when the reply path saw one of
 * `sentTo` gone (src/transport/reply-sender.ts), before the send that would fail.
 */
import type { ICustomPartitioner, Producer as KProducer } from "kafkajs";
import { CODEC_IDS, type CodecName } from "./codecs.js";
import type { KafkaConnection } from "./connection.js";
import { isUnknownTopic, SendFailure, toSendFailure } from "./errors.js";
import { type KeyPartitioner, kafkajsPartitioner } from "./partitioner.js";
import type { OutRecord } from "./records.js";

export interface Producer {
  /**
   * Sends every record and resolves when all are acknowledged by all in-sync replicas. Records for
   * topics that do not exist (a client's reply topic deleted meanwhile) cannot be delivered: they
   * are left out and their topics returned.
   */
  send(records: OutRecord[]): Promise<{ undeliverable: string[] }>;
  /**
   * Sends records to one partition of one topic in one produce request, which the broker appends
   * whole or not at all, so a failure belongs to exactly these records. Throws a SendFailure.
   */
  sendPartition(topic: string, partition: number, records: OutRecord[]): Promise<void>;
  /**
   * The topics sent to since the kafkajs producer was made: kafkajs asks the metadata of all of
   * them whenever a send names a topic new to it, and fails that send when one is gone (#1622).
   */
  readonly sentTo: ReadonlySet<string>;
  /** One of `sentTo` is gone: the next send starts with a fresh kafkajs producer, instead of failing first. */
  renewBeforeNextSend(): void;
  close(): Promise<void>;
}

export interface ProducerOptions {
  /** Places records sent without a partition (default: Kafka's Java murmur2). */
  partitioner?: KeyPartitioner;
  /** How sent batches are compressed (default: not at all). */
  compression?: CodecName;
  /** Every topic name of the cluster, asked when a send met a topic that is gone. */
  listTopics(): Promise<string[]>;
  /** Called when the producer closes, after it disconnected. */
  onClose(): Promise<void>;
}

/** A kafkajs producer connected to the cluster, placing records without a partition by `createPartitioner`. */
async function connectProducer(connection: KafkaConnection, createPartitioner: ICustomPartitioner): Promise<KProducer> {
  const producer = connection.producer({
    createPartitioner,
    allowAutoTopicCreation: false,
    idempotent: false,
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 },
  });
  await connection.login(producer);
  return producer;
}

export class KafkaProducer implements Producer {
  readonly #connection: KafkaConnection;
  readonly #options: ProducerOptions;
  readonly #createPartitioner: ICustomPartitioner;
  #producer: KProducer;
  /** kafkajs's codec id for `options.compression`. */
  readonly #compression: number;
  /** Set when a partition send failed in a way a fresh producer may not: the next one renews first. */
  #renewBeforeNextSend = false;
  /** The renewal under way: sends meanwhile wait for the fresh producer. */
  #renewing: Promise<void> | undefined;
  readonly #sentTo = new Set<string>();

  private constructor(connection: KafkaConnection, options: ProducerOptions, createPartitioner: ICustomPartitioner, producer: KProducer) {
    this.#connection = connection;
    this.#options = options;
    this.#createPartitioner = createPartitioner;
    this.#producer = producer;
    this.#compression = CODEC_IDS[options.compression ?? "none"];
  }

  /** A producer connected to the cluster. */
  static async connect(connection: KafkaConnection, options: ProducerOptions): Promise<KafkaProducer> {
    const createPartitioner = kafkajsPartitioner(options.partitioner);
    return new KafkaProducer(connection, options, createPartitioner, await connectProducer(connection, createPartitioner));
  }

  get sentTo(): ReadonlySet<string> {
    return this.#sentTo;
  }

  renewBeforeNextSend(): void {
    this.#renewBeforeNextSend = true;
  }

  /** The one renewal path: drops the kafkajs producer (and its metadata) and connects a fresh one, once for all sends waiting. */
  #renew(): Promise<void> {
    this.#renewBeforeNextSend = false;
    this.#renewing ??= (async () => {
      await this.#producer.disconnect().catch(() => {});
      this.#sentTo.clear();
      try {
        this.#producer = await connectProducer(this.#connection, this.#createPartitioner);
      } catch (e) {
        this.#renewBeforeNextSend = true; // the producer left is disconnected: the next send tries again
        throw e;
      }
    })().finally(() => {
      this.#renewing = undefined;
    });
    return this.#renewing;
  }

  #sendBatch(records: OutRecord[]) {
    const byTopic = new Map<string, OutRecord[]>();
    for (const r of records) byTopic.set(r.topic, [...(byTopic.get(r.topic) ?? []), r]);
    for (const topic of byTopic.keys()) this.#sentTo.add(topic);
    return this.#producer.sendBatch({
      acks: -1,
      compression: this.#compression,
      topicMessages: [...byTopic].map(([topic, rs]) => ({
        topic,
        messages: rs.map((r) => ({
          key: r.key,
          value: r.value,
          headers: r.headers,
          ...(r.partition !== undefined && { partition: r.partition }),
        })),
      })),
    });
  }

  async send(records: OutRecord[]): Promise<{ undeliverable: string[] }> {
    if (records.length === 0) return { undeliverable: [] };
    if (this.#renewBeforeNextSend || this.#renewing) await this.#renew();
    try {
      await this.#sendBatch(records);
      return { undeliverable: [] };
    } catch (e) {
      if (!isUnknownTopic(e)) throw e;
      // A topic is gone: start over with a fresh producer and leave out the records whose topic is gone.
      await this.#renew();
      const existing = new Set(await this.#options.listTopics());
      const undeliverable = [...new Set(records.map((r) => r.topic).filter((t) => !existing.has(t)))];
      await this.#sendBatch(records.filter((r) => existing.has(r.topic)));
      return { undeliverable };
    }
  }

  async sendPartition(topic: string, partition: number, records: OutRecord[]): Promise<void> {
    if (this.#renewBeforeNextSend || this.#renewing) await this.#renew();
    this.#sentTo.add(topic);
    try {
      // Replies addressed to this partition already are kafkajs messages: sent as they are, not copied.
      const messages = records.every((r) => r.partition === partition)
        ? records
        : records.map((r) => ({ key: r.key, value: r.value, headers: r.headers, partition }));
      const written = await this.#producer.send({ topic, acks: -1, compression: this.#compression, messages });
      // kafkajs leaves out, silently, records for a partition its own metadata does not show
      // yet (a topic grown since it last asked: kafkajs's Cluster.findLeaderForPartitions),
      // and reports success. Not acknowledged means not written: a fresh producer asks again.
      if (!written.some((w) => w.partition === partition)) {
        this.#renewBeforeNextSend = true;
        throw new SendFailure(
          "unknown-topic",
          "PARTITION_NOT_IN_METADATA",
          `${topic}/${partition} is not in the producer's metadata yet; nothing was written`,
          undefined,
        );
      }
    } catch (e) {
      if (e instanceof SendFailure) throw e;
      const f = toSendFailure(e);
      // After a topic is gone every later send fails (kafkajs #1622): the next send renews first.
      if (f.kind === "unknown-topic") this.#renewBeforeNextSend = true;
      throw f;
    }
  }

  async close(): Promise<void> {
    await this.#producer.disconnect();
    await this.#options.onClose();
  }
}
