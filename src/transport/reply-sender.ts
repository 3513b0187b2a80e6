/**
 * The reply path: delivers a worker's outgoing records so that no record can fail the others.
 *
 * - Records are grouped per topic-partition and sent in chunks under the broker's limits (records
 *   and bytes), one produce request per chunk, so the broker appends a chunk whole or not at all and
 *   a failure belongs to exactly that chunk's records. Chunks of different partitions go out
 *   concurrently; chunks of one partition in order.
 * - A chunk the broker refuses because of a record (too large, invalid) is split in halves until
 *   the refused records stand alone; a destination that refuses everything (invalid, internal or
 *   unauthorised topic) fails its chunks at once; a topic or partition that does not exist fails
 *   its chunks after the metadata confirms it; anything else is retried until `retryMs` after the
 *   call's first such failure.
 * - Each record ends delivered once or with a failure naming the broker's reason: nothing is sent
 *   twice by this call (a request that timed out on the wire may still have been written; Kafka
 *   without idempotence cannot tell).
 */
import { performance } from "node:perf_hooks";
import { type OutRecord, type Producer, partitionForKey, SendFailure } from "./kafka/index.js";
import type { TopicMetadata } from "./topic-metadata.js";

export type DeliveryCode = "REPLY_REFUSED" | "REPLY_TOPIC_UNKNOWN" | "REPLY_PARTITION_INVALID" | "REPLY_FAILED";

export interface DeliveryFailure {
  code: DeliveryCode;
  reason: string;
}

export interface ReplySenderOptions {
  /** Records per produce request. */
  maxRecords: number;
  /** Bytes of records per produce request; below the broker's message.max.bytes (1 MiB by default). */
  maxBytes: number;
  /** How long transient failures are retried, from the first one in a call. */
  retryMs: number;
  /** Produce requests in flight at once. */
  concurrency: number;
  /** Monotonic (`performance.now()` by default): a wall clock stepped back must not stretch `retryMs` by the step. */
  clock?: () => number;
}

/** Bytes a record takes on the wire, near enough to chunk by (record overhead ~70 bytes). */
export function recordBytes(r: OutRecord): number {
  let n = 70 + r.value.length + (r.key === null ? 0 : typeof r.key === "string" ? Buffer.byteLength(r.key) : r.key.length);
  for (const k in r.headers) {
    const v = r.headers[k] as Buffer | string | (Buffer | string)[];
    for (const one of Array.isArray(v) ? v : [v]) n += k.length + (typeof one === "string" ? Buffer.byteLength(one) : one.length) + 2;
  }
  return n;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class ReplySender {
  readonly #producer: Producer;
  readonly #metadata: TopicMetadata;
  readonly #o: Required<ReplySenderOptions>;

  constructor(producer: Producer, metadata: TopicMetadata, o: ReplySenderOptions) {
    this.#producer = producer;
    this.#metadata = metadata;
    this.#o = { clock: () => performance.now(), ...o };
  }

  /**
   * Delivers every record at most once. Returns, per record, undefined when the broker acknowledged
   * it (acks=all) or why it was not delivered. Never throws for a record's sake; `beat` is called
   * while transient failures are retried (consumer heartbeats).
   */
  async deliver(records: OutRecord[], beat: () => Promise<void>): Promise<(DeliveryFailure | undefined)[]> {
    const out: (DeliveryFailure | undefined)[] = new Array(records.length).fill(undefined);
    if (records.length === 0) return out;
    const fail = (idx: number[], f: DeliveryFailure) => {
      for (const i of idx) out[i] = f;
    };
    const counts = await this.#metadata.partitions(records);
    await this.#renewIfSentToGone(records);
    const byPartition = new Map<string, { topic: string; partition: number; idx: number[] }>();
    for (const [i, r] of records.entries()) {
      const n = counts.get(r.topic);
      if (n === undefined) {
        fail([i], { code: "REPLY_TOPIC_UNKNOWN", reason: `topic "${r.topic}" does not exist` });
        continue;
      }
      const partition = r.partition ?? partitionForKey(r.topic, r.key, n);
      if (!Number.isInteger(partition) || partition < 0 || partition >= n) {
        fail([i], { code: "REPLY_PARTITION_INVALID", reason: `topic "${r.topic}" has ${n} partitions; ${partition} is not one` });
        continue;
      }
      const tp = `${partition} ${r.topic}`;
      const g = byPartition.get(tp) ?? { topic: r.topic, partition, idx: [] };
      byPartition.set(tp, g);
      g.idx.push(i);
    }

    let transientUntil: number | undefined;
    const send = async (topic: string, partition: number, idx: number[]): Promise<void> => {
      for (let wait = 100; ; wait = Math.min(wait * 2, 1000)) {
        try {
          await this.#producer.sendPartition(
            topic,
            partition,
            idx.map((i) => records[i] as OutRecord),
          );
          return;
        } catch (e) {
          const f = e instanceof SendFailure ? e : new SendFailure("transient", "Error", String(e), e);
          const reason = `${f.type}: ${f.message}`;
          if (f.kind === "record") {
            if (idx.length === 1) return fail(idx, { code: "REPLY_REFUSED", reason });
            const half = Math.ceil(idx.length / 2);
            await send(topic, partition, idx.slice(0, half));
            return send(topic, partition, idx.slice(half));
          }
          if (f.kind === "destination") return fail(idx, { code: "REPLY_REFUSED", reason });
          if (f.kind === "unknown-topic") {
            // The snapshot had it: a broker that has not learnt of it yet, or a topic deleted since.
            this.#metadata.invalidate();
            const asked = this.#metadata.partitions([{ topic, partition }], this.#metadata.now());
            const n = (await asked.catch(() => new Map())).get(topic);
            if (n === undefined) return fail(idx, { code: "REPLY_TOPIC_UNKNOWN", reason: `topic "${topic}" does not exist (${reason})` });
            if (partition >= n) {
              return fail(idx, { code: "REPLY_PARTITION_INVALID", reason: `topic "${topic}" has ${n} partitions (${reason})` });
            }
          }
          const now = this.#o.clock();
          transientUntil ??= now + this.#o.retryMs;
          if (now >= transientUntil)
            return fail(idx, { code: "REPLY_FAILED", reason: `still failing after ${this.#o.retryMs} ms: ${reason}` });
          await beat().catch(() => {});
          await sleep(wait);
        }
      }
    };

    // One task per partition (its chunks in order), at most `concurrency` partitions at once.
    const tasks = [...byPartition.values()].map((g) => async () => {
      for (const chunk of this.#chunks(records, g.idx)) await send(g.topic, g.partition, chunk);
    });
    const run = async () => {
      for (let t = tasks.shift(); t; t = tasks.shift()) await t();
    };
    await Promise.all(Array.from({ length: Math.min(this.#o.concurrency, tasks.length) }, run));
    return out;
  }

  /**
   * A send naming a topic new to the producer makes kafkajs ask the metadata of every topic it sent
   * to, and fail when one is gone (a client's reply topic deleted since: kafkajs #1622). So before
   * such a send, the topics sent to are looked up, on the snapshot (a new reply topic has just
   * refreshed it), and a producer that holds one that is gone is renewed first: one reconnection,
   * instead of a send that fails after kafkajs's retries (a second, logged as errors) and then renews.
   */
  async #renewIfSentToGone(records: OutRecord[]): Promise<void> {
    const sent = this.#producer.sentTo;
    if (sent.size === 0 || records.every((r) => sent.has(r.topic))) return;
    const counts = await this.#metadata.partitions([...sent].map((topic) => ({ topic })));
    for (const topic of sent) if (counts.get(topic) === undefined) return this.#producer.renewBeforeNextSend();
  }

  *#chunks(records: OutRecord[], idx: number[]): Generator<number[]> {
    let chunk: number[] = [];
    let bytes = 0;
    for (const i of idx) {
      const b = recordBytes(records[i] as OutRecord);
      if (chunk.length > 0 && (chunk.length >= this.#o.maxRecords || bytes + b > this.#o.maxBytes)) {
        yield chunk;
        chunk = [];
        bytes = 0;
      }
      chunk.push(i);
      bytes += b;
    }
    if (chunk.length > 0) yield chunk;
  }
}
