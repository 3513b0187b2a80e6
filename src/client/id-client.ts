/**
 * IdClient: asks idd for numbers over Kafka, for Node services. Each client has its own reply
 * topic (one partition) and waits until its reply consumer is assigned before the first request,
 * so no reply is lost. Requests are JSON by default, or Avro through the schema registry.
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { KafkaSecurity, RegistrySecurity } from "../config/security.js";
import { IddError } from "../core/errors.js";
import { avroType, frame, requestSchemaText, requestType, unframe } from "../protocol/avro.js";
import { HEADER_CORRELATION_ID, HEADER_REPLY_PARTITION, HEADER_REPLY_TOPIC, headerBytes } from "../protocol/headers.js";
import { type IdReply, replyFromJson } from "../protocol/reply.js";
import { RegistryClient } from "../registry/client.js";
import {
  type Consumer,
  createKafka,
  type KafkaTransport,
  type KeyPartitioner,
  type OutRecord,
  type Producer,
  topicDurability,
} from "../transport/kafka/index.js";
import { type IdResult, resultOf, type SettleOptions, settleJson } from "./result.js";

export type { IdResult, SettleOptions };

/** kafka_replyPartition of every request: partition 0 of the reply topic, as Spring encodes it (4-byte big-endian int). */
const REPLY_PARTITION_0 = Buffer.alloc(4);
/** Pause before a request is sent again while the brokers are unreachable. */
const SEND_RETRY_MS = 250;
/** Records per send (one produce request per broker). */
const MAX_BATCH = 500;
/** Sends in flight at once; requests issued meanwhile queue up and go out together. */
const MAX_IN_FLIGHT = 4;

export interface IdClientOptions {
  brokers: string[];
  /** TLS and SASL to the brokers (docs/operations.md: Security). */
  kafkaSecurity?: KafkaSecurity;
  requestTopic?: string;
  /** Default: `idd.replies.<random>`; created with one partition if missing. */
  replyTopic?: string;
  timeoutMs?: number;
  format?: "json" | "avro";
  /** Needed for the Avro format; may carry user-info (basic auth). */
  schemaRegistryUrl?: string;
  /** Basic auth and a CA for the registry. */
  schemaRegistrySecurity?: RegistrySecurity;
  logger?: Logger;
  /**
   * How requests pick their partition (default: Kafka's murmur2 of the sequence name, which is
   * each sequence's home partition). Any other partitioner works too: its requests are forwarded
   * home by the worker that reads them, one extra hop each (docs/wire-contract.md: Routing).
   */
  partitioner?: KeyPartitioner;
}

/** A request from next() until it is answered, times out, fails to be sent or the client closes. */
interface Pending {
  /** The request's number in this client, the key of #pending (and the end of its correlation id). */
  key: number;
  requestId: string;
  sequence: string;
  timeoutMs: number;
  /** Epoch ms: the request's deadline and when its timer fires. */
  deadline: number;
  /** The record, the same on every send (same requestId and correlation id). */
  record: OutRecord;
  attempts: number;
  /** Kafka acknowledged a send of it. */
  sent: boolean;
  lastError?: Error;
  done: boolean;
  resolve: (r: IdReply) => void;
  reject: (e: Error) => void;
  timer?: NodeJS.Timeout;
}

export class IdClient {
  readonly replyTopic: string;
  readonly #o: Required<Pick<IdClientOptions, "requestTopic" | "timeoutMs" | "format">> & IdClientOptions;
  readonly #kafka: KafkaTransport;
  readonly #pending = new Map<number, Pending>();
  /** Correlation ids are this client's random 8 bytes and then the request's number (8 bytes). */
  readonly #correlationPrefix = randomBytes(8);
  #requests = 0;
  readonly #registry: RegistryClient | undefined;
  #producer: Producer | undefined;
  #consumer: Consumer | undefined;
  #closed = false;
  #requestSchemaId = 0;
  /** Requests waiting to be sent, in order. */
  #outbox: Pending[] = [];
  #flush: NodeJS.Immediate | undefined;
  #inFlight = 0;
  readonly #retryTimers = new Set<NodeJS.Timeout>();
  /** Compiled Avro reply types by schema id. */
  readonly #replyTypes = new Map<number, Promise<ReturnType<typeof avroType>>>();

  private constructor(o: IdClientOptions) {
    this.#o = { requestTopic: "idd.requests", timeoutMs: 10_000, format: "json", ...o };
    this.replyTopic = o.replyTopic ?? `idd.replies.${randomUUID()}`;
    this.#kafka = createKafka({
      brokers: o.brokers,
      clientId: `idd-client-${randomUUID().slice(0, 8)}`,
      ...(o.logger && { logger: o.logger }),
      ...(o.kafkaSecurity && { security: o.kafkaSecurity }),
    });
    this.#registry = o.schemaRegistryUrl
      ? new RegistryClient(o.schemaRegistryUrl, { ...(o.schemaRegistrySecurity && { security: o.schemaRegistrySecurity }) })
      : undefined;
  }

  static async connect(o: IdClientOptions): Promise<IdClient> {
    const c = new IdClient(o);
    await c.#start();
    return c;
  }

  async #start(): Promise<void> {
    if (this.#o.format === "avro") {
      if (!this.#registry) throw new IddError("CONFIG_INVALID", "the Avro format needs schemaRegistryUrl");
      this.#requestSchemaId = await this.#registry.register(`${this.#o.requestTopic}-value`, requestSchemaText);
    }
    // Replicated like the worker's topics: a reply topic on one broker would leave the client deaf while that broker is down.
    await this.#kafka.ensureTopics([{ topic: this.replyTopic, partitions: 1, ...topicDurability(await this.#kafka.brokerCount()) }]);
    this.#producer = await this.#kafka.producer(this.#o.partitioner ? { partitioner: this.#o.partitioner } : {});
    let assigned!: () => void;
    const ready = new Promise<void>((r) => {
      assigned = r;
    });
    this.#consumer = await this.#kafka.consumer({
      groupId: `idd-client-${randomUUID()}`,
      topic: this.replyTopic,
      fromBeginning: true,
      concurrency: 1,
      onAssigned: (p) => {
        if (p.includes(0)) assigned();
      },
      onBatch: async (batch, ctx) => {
        const decoding: Promise<void>[] = []; // Avro replies only: their schema may need a registry lookup
        for (const r of batch.records) {
          const d = this.#onReply(r.value, headerBytes(r.headers, HEADER_CORRELATION_ID));
          if (d) decoding.push(d);
        }
        if (decoding.length > 0) await Promise.all(decoding);
        ctx.commit((BigInt((batch.records.at(-1) as { offset: string }).offset) + 1n).toString());
      },
    });
    await ready; // a reply sent before the consumer is assigned would be missed
  }

  /** Settles the request a reply answers; a promise only while an Avro reply is decoded. */
  #onReply(value: Buffer | null, correlation: Buffer | undefined): Promise<void> | undefined {
    if (!value || !correlation) return undefined;
    if (correlation.length !== 16 || correlation.compare(this.#correlationPrefix, 0, 8, 0, 8) !== 0) return undefined; // not ours
    const p = this.#pending.get(correlation.readUInt32BE(8) * 2 ** 32 + correlation.readUInt32BE(12));
    if (!p) return undefined; // a late reply to a request that timed out, or a duplicate
    this.#settle(p);
    if (value[0] === 0x7b) {
      try {
        p.resolve(replyFromJson(value.toString("utf8")));
      } catch (e) {
        p.reject(e as Error);
      }
      return undefined;
    }
    return this.#decode(value).then(p.resolve, p.reject);
  }

  async #decode(value: Buffer): Promise<IdReply> {
    const { schemaId, body } = unframe(value);
    let type = this.#replyTypes.get(schemaId);
    if (!type) {
      // One registry lookup and one compiled type per writer schema, also for a batch of replies
      // that arrive before the first lookup is answered.
      type = (this.#registry as RegistryClient).schemaById(schemaId).then((text) => avroType(text));
      this.#replyTypes.set(schemaId, type);
      type.catch(() => this.#replyTypes.delete(schemaId)); // a failed lookup is tried again by the next reply
    }
    return (await type).fromBuffer(body) as IdReply;
  }

  /**
   * Asks for `count` numbers of `sequence`; rejects with an IddError carrying the reply's code.
   * Requests issued together (in the same tick, or while earlier sends are in flight) are sent
   * together, many records per send.
   */
  async next(
    sequence: string,
    count = 1,
    opts: { requestId?: string; timeoutMs?: number; fields?: Record<string, string> } = {},
  ): Promise<IdResult> {
    return resultOf(await this.reply(sequence, count, opts));
  }

  /**
   * Confirms numbers of a gapless sequence (docs/sequences.md: Gapless numbering): they are used, for good.
   * `period`: the one `next` gave them, for sequences that restart. Resolves with the numbers
   * confirmed; confirming twice is fine; rejects with GAPLESS_NOT_PENDING (a number never issued or
   * voided) or NOT_GAPLESS.
   */
  async confirm(sequence: string, numbers: readonly bigint[], opts: SettleOptions = {}): Promise<IdResult> {
    return resultOf(
      await this.reply(sequence, 1, { ...opts, settle: { action: "CONFIRM", numbers, reason: null, period: opts.period ?? null } }),
    );
  }

  /** Voids numbers of a gapless sequence with a reason (kept with each number): they will never be used. */
  async void(sequence: string, numbers: readonly bigint[], reason: string, opts: SettleOptions = {}): Promise<IdResult> {
    return resultOf(await this.reply(sequence, 1, { ...opts, settle: { action: "VOID", numbers, reason, period: opts.period ?? null } }));
  }

  /**
   * next() without reading the reply: the whole reply as it arrived, error replies included (`idd next
   * --json`). Rejects only when no reply came (CLIENT_TIMEOUT, CLIENT_SEND_FAILED, CLIENT_CLOSED).
   */
  async reply(
    sequence: string,
    count = 1,
    opts: {
      requestId?: string;
      timeoutMs?: number;
      fields?: Record<string, string>;
      /** A CONFIRM or VOID of gapless numbers instead of an ISSUE. */
      settle?: { action: "CONFIRM" | "VOID"; numbers: readonly bigint[]; reason: string | null; period?: string | null };
    } = {},
  ): Promise<IdReply> {
    if (this.#closed) throw new IddError("CLIENT_CLOSED", "client is closed");
    const requestId = opts.requestId ?? randomUUID();
    const timeoutMs = opts.timeoutMs ?? this.#o.timeoutMs;
    const key = ++this.#requests;
    const correlation = Buffer.allocUnsafe(16);
    this.#correlationPrefix.copy(correlation, 0);
    correlation.writeUInt32BE(Math.floor(key / 2 ** 32), 8);
    correlation.writeUInt32BE(key % 2 ** 32, 12);
    const deadline = Date.now() + timeoutMs;
    const fields = opts.fields ?? {};
    const st = opts.settle;
    const settle = st && { action: st.action, numbers: [...st.numbers], reason: st.reason, period: st.period ?? null };
    const request = { requestId, sequence, count, replyTo: null, deadline: BigInt(deadline), fields, ...settle };
    const value =
      this.#o.format === "avro"
        ? frame(this.#requestSchemaId, requestType, request)
        : // What toJson writes for the request without replyTo, without its replacer's cost.
          Buffer.from(
            `{"requestId":${JSON.stringify(requestId)},"sequence":${JSON.stringify(sequence)},"count":${JSON.stringify(count)},"deadline":${deadline}${opts.fields ? `,"fields":${JSON.stringify(fields)}` : ""}${settle ? settleJson(settle) : ""}}`,
            "utf8",
          );
    const record: OutRecord = {
      topic: this.#o.requestTopic,
      key: sequence,
      value,
      headers: {
        [HEADER_CORRELATION_ID]: correlation,
        [HEADER_REPLY_TOPIC]: this.replyTopic,
        [HEADER_REPLY_PARTITION]: REPLY_PARTITION_0,
      },
    };
    return new Promise<IdReply>((resolve, reject) => {
      const p: Pending = {
        key,
        requestId,
        sequence,
        timeoutMs,
        deadline,
        record,
        attempts: 0,
        sent: false,
        done: false,
        resolve,
        reject,
      };
      p.timer = setTimeout(() => this.#expire(p), timeoutMs);
      this.#pending.set(p.key, p);
      this.#enqueue([p]);
    });
  }

  /** Ends a request's life in the client (its timer, its slot); the caller resolves or rejects it. */
  #settle(p: Pending): void {
    p.done = true;
    clearTimeout(p.timer);
    this.#pending.delete(p.key);
  }

  /**
   * The request's timeout passed: CLIENT_TIMEOUT when Kafka took it (no reply came), else
   * CLIENT_SEND_FAILED (the brokers did not take it in time).
   */
  #expire(p: Pending): void {
    if (p.done) return;
    this.#settle(p);
    p.reject(
      p.sent ? new IddError("CLIENT_TIMEOUT", `no reply to ${p.requestId} (${p.sequence}) within ${p.timeoutMs} ms`) : this.#sendFailed(p),
    );
  }

  #sendFailed(p: Pending): IddError {
    const why = p.lastError ? p.lastError.message : "the send was not acknowledged";
    return new IddError(
      "CLIENT_SEND_FAILED",
      `request ${p.requestId} (${p.sequence}) not sent within ${p.timeoutMs} ms after ${p.attempts} attempts: ${why}`,
      { ...(p.lastError && { cause: p.lastError }) },
    );
  }

  #enqueue(ps: Pending[]): void {
    for (const p of ps) if (!p.done) this.#outbox.push(p);
    this.#schedule();
  }

  /** Sends what waits on the next turn of the event loop, so requests issued together go together. */
  #schedule(): void {
    if (this.#flush || this.#outbox.length === 0 || this.#inFlight >= MAX_IN_FLIGHT || this.#closed) return;
    this.#flush = setImmediate(() => {
      this.#flush = undefined;
      while (this.#outbox.length > 0 && this.#inFlight < MAX_IN_FLIGHT) {
        const batch = this.#outbox.splice(0, MAX_BATCH).filter((p) => !p.done);
        if (batch.length > 0) void this.#send(batch);
      }
    });
  }

  /**
   * One send of many requests. Brokers unreachable: each is sent again after SEND_RETRY_MS while
   * its deadline allows, else fails with CLIENT_SEND_FAILED. A request written twice has the same
   * requestId and correlation id: idd answers the copy alike (dedupe), and the first reply wins.
   */
  async #send(batch: Pending[]): Promise<void> {
    this.#inFlight++;
    for (const p of batch) p.attempts++;
    try {
      // Records whose topic does not exist are left out by the producer; like any unanswered
      // request they end with CLIENT_TIMEOUT.
      await (this.#producer as Producer).send(batch.map((p) => p.record));
      for (const p of batch) p.sent = true;
    } catch (e) {
      const now = Date.now();
      const again: Pending[] = [];
      for (const p of batch) {
        if (p.done) continue;
        p.lastError = e as Error;
        if (p.deadline - now > SEND_RETRY_MS && !this.#closed) again.push(p);
        else {
          this.#settle(p);
          p.reject(this.#sendFailed(p));
        }
      }
      if (again.length > 0) {
        const t = setTimeout(() => {
          this.#retryTimers.delete(t);
          this.#enqueue(again);
        }, SEND_RETRY_MS);
        this.#retryTimers.add(t);
      }
    } finally {
      this.#inFlight--;
      this.#schedule();
    }
  }

  /** Closes the client; pending requests fail with CLIENT_CLOSED. The reply topic is deleted when `deleteReplyTopic`. */
  async close(opts: { deleteReplyTopic?: boolean } = {}): Promise<void> {
    this.#closed = true;
    if (this.#flush) clearImmediate(this.#flush);
    this.#flush = undefined;
    for (const t of this.#retryTimers) clearTimeout(t);
    this.#retryTimers.clear();
    this.#outbox = [];
    for (const p of [...this.#pending.values()]) {
      this.#settle(p);
      p.reject(new IddError("CLIENT_CLOSED", "client closed"));
    }
    await this.#consumer?.close();
    await this.#producer?.close();
    this.#producer = undefined;
    if (opts.deleteReplyTopic) await this.#kafka.deleteTopics([this.replyTopic]).catch(() => {});
  }
}
