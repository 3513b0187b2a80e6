/**
 * IdClient: asks idd for numbers over Kafka, for Node services. Each client has its own reply
 * topic (one partition) and waits until its reply consumer is assigned before the first request,
 * so no reply is lost. Requests are JSON by default, or Avro through the schema registry.
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { type ErrorCode, ErrorCodes, IddError } from "../errors.js";
import { avroType, frame, requestSchemaText, requestType, unframe } from "../protocol/avro.js";
import { HEADER_CORRELATION_ID, HEADER_REPLY_PARTITION, HEADER_REPLY_TOPIC, headerBytes } from "../protocol/headers.js";
import { type IdReply, type Range, replyFromJson, toJson } from "../protocol/reply.js";
import { RegistryClient } from "../registry/client.js";
import { type Consumer, createKafka, type KafkaTransport, type Producer } from "../transport/kafka.js";

/** Pause between sends of one request while the brokers are unreachable. */
const SEND_RETRY_MS = 250;

export interface IdClientOptions {
  brokers: string[];
  requestTopic?: string;
  /** Default: `idd.replies.<random>`; created with one partition if missing. */
  replyTopic?: string;
  timeoutMs?: number;
  format?: "json" | "avro";
  /** Needed for the Avro format. */
  schemaRegistryUrl?: string;
  logger?: Logger;
}

export interface IdResult {
  requestId: string;
  sequence: string;
  period: string | null;
  ranges: Range[];
  /** The numbers, expanded from the ranges (fine for small counts). */
  numbers: bigint[];
}

interface Pending {
  resolve: (r: IdReply) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

export class IdClient {
  readonly replyTopic: string;
  readonly #o: Required<Pick<IdClientOptions, "requestTopic" | "timeoutMs" | "format">> & IdClientOptions;
  readonly #kafka: KafkaTransport;
  readonly #pending = new Map<string, Pending>();
  readonly #registry: RegistryClient | undefined;
  #producer: Producer | undefined;
  #consumer: Consumer | undefined;
  #requestSchemaId = 0;

  private constructor(o: IdClientOptions) {
    this.#o = { requestTopic: "idd.requests", timeoutMs: 10_000, format: "json", ...o };
    this.replyTopic = o.replyTopic ?? `idd.replies.${randomUUID()}`;
    this.#kafka = createKafka({
      brokers: o.brokers,
      clientId: `idd-client-${randomUUID().slice(0, 8)}`,
      ...(o.logger && { logger: o.logger }),
    });
    this.#registry = o.schemaRegistryUrl ? new RegistryClient(o.schemaRegistryUrl) : undefined;
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
    await this.#kafka.ensureTopics([{ topic: this.replyTopic, partitions: 1 }]);
    this.#producer = await this.#kafka.producer();
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
        for (const r of batch.records) await this.#onReply(r.value, headerBytes(r.headers, HEADER_CORRELATION_ID));
        ctx.commit((BigInt((batch.records.at(-1) as { offset: string }).offset) + 1n).toString());
      },
    });
    await ready; // a reply sent before the consumer is assigned would be missed
  }

  async #onReply(value: Buffer | null, correlation: Buffer | undefined): Promise<void> {
    if (!value || !correlation) return;
    const pending = this.#pending.get(correlation.toString("hex"));
    if (!pending) return; // a late reply to a request that timed out, or a duplicate
    this.#pending.delete(correlation.toString("hex"));
    clearTimeout(pending.timer);
    try {
      pending.resolve(await this.#decode(value));
    } catch (e) {
      pending.reject(e as Error);
    }
  }

  async #decode(value: Buffer): Promise<IdReply> {
    if (value[0] === 0x7b) return replyFromJson(value.toString("utf8"));
    const { schemaId, body } = unframe(value);
    const text = await (this.#registry as RegistryClient).schemaById(schemaId);
    return avroType(text).fromBuffer(body) as IdReply;
  }

  /** Asks for `count` numbers of `sequence`; rejects with an IddError carrying the reply's code. */
  async next(sequence: string, count = 1, opts: { requestId?: string; timeoutMs?: number } = {}): Promise<IdResult> {
    if (!this.#producer) throw new IddError("CLIENT_CLOSED", "client is closed");
    const requestId = opts.requestId ?? randomUUID();
    const timeoutMs = opts.timeoutMs ?? this.#o.timeoutMs;
    const correlation = randomBytes(16);
    const request = { requestId, sequence, count, replyTo: null, deadline: BigInt(Date.now() + timeoutMs) };
    const value =
      this.#o.format === "avro"
        ? frame(this.#requestSchemaId, requestType, request)
        : Buffer.from(toJson({ ...request, replyTo: undefined }), "utf8");
    const partition = Buffer.alloc(4); // Spring's encoding: 4-byte big-endian int
    const reply = new Promise<IdReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(correlation.toString("hex"));
        reject(new IddError("CLIENT_TIMEOUT", `no reply to ${requestId} (${sequence}) within ${timeoutMs} ms`, { retriable: true }));
      }, timeoutMs);
      this.#pending.set(correlation.toString("hex"), { resolve, reject, timer });
    });
    reply.catch(() => {}); // observed below, unless sending fails first
    const record = {
      topic: this.#o.requestTopic,
      key: sequence,
      value,
      headers: { [HEADER_CORRELATION_ID]: correlation, [HEADER_REPLY_TOPIC]: this.replyTopic, [HEADER_REPLY_PARTITION]: partition },
    };
    // Brokers restarting: send again until the timeout. A request written twice has the same
    // requestId and correlation id: idd answers the copy alike (dedupe), and the first reply wins.
    for (let attempt = 1; ; attempt++) {
      try {
        await (this.#producer as Producer).send([record]);
        break;
      } catch (e) {
        const left = Number(request.deadline) - Date.now();
        if (left > SEND_RETRY_MS && this.#producer) {
          await new Promise((r) => setTimeout(r, SEND_RETRY_MS));
          continue;
        }
        const p = this.#pending.get(correlation.toString("hex"));
        clearTimeout(p?.timer);
        this.#pending.delete(correlation.toString("hex"));
        throw new IddError(
          "CLIENT_SEND_FAILED",
          `request ${requestId} (${sequence}) not sent within ${timeoutMs} ms after ${attempt} attempts: ${(e as Error).message}`,
          { cause: e, retriable: true },
        );
      }
    }
    const r = await reply;
    if (r.status !== "OK") {
      const code = (r.error?.code ?? "INTERNAL") as ErrorCode;
      throw new IddError(code in ErrorCodes ? code : "INTERNAL", r.error?.message ?? "error reply");
    }
    const numbers = r.ranges.flatMap((x) => Array.from({ length: Number(x.last - x.first + 1n) }, (_, i) => x.first + BigInt(i)));
    return { requestId: r.requestId, sequence: r.sequence, period: r.period, ranges: r.ranges, numbers };
  }

  /** Closes the client; pending requests fail with CLIENT_CLOSED. The reply topic is deleted when `deleteReplyTopic`. */
  async close(opts: { deleteReplyTopic?: boolean } = {}): Promise<void> {
    for (const [id, p] of this.#pending) {
      clearTimeout(p.timer);
      p.reject(new IddError("CLIENT_CLOSED", "client closed"));
      this.#pending.delete(id);
    }
    await this.#consumer?.close();
    await this.#producer?.close();
    this.#producer = undefined;
    if (opts.deleteReplyTopic) await this.#kafka.deleteTopics([this.replyTopic]).catch(() => {});
  }
}
