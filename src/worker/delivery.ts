/**
 * Delivering a step's outgoing records: replies, forwards to home partitions, and dead letters
 * for what cannot be answered on a reply topic (docs/wire-contract.md: Dead letters).
 */
import { IddError } from "../core/errors.js";
import type { Instrumentation } from "../core/events.js";
import type { rateLimited } from "../core/log.js";
import type { Batch, OutRecord } from "../transport/kafka/index.js";
import type { ReplySender } from "../transport/reply-sender.js";
import type { TopicMetadata } from "../transport/topic-metadata.js";
import { deadLetter } from "./answer.js";
import type { Item } from "./item.js";

/** What a worker counts of its deliveries. */
export interface DeliveryStats {
  replies: number;
  deadLetters: number;
  /** Dead-letter records the broker refused too: logged, and the offset moves on. */
  lost: number;
  /** Requests forwarded to their sequence's home partition. */
  forwarded: number;
}

export interface DeliveryDeps {
  sender: ReplySender;
  metadata: TopicMetadata;
  requestTopic: string;
  deadLetterTopic: string;
  events: Instrumentation;
  stats: DeliveryStats;
  limitedLog: ReturnType<typeof rateLimited>;
}

export class Delivery {
  readonly #d: DeliveryDeps;

  constructor(d: DeliveryDeps) {
    this.#d = d;
  }

  /**
   * Sends every item's reply or forward, or its dead-letter record when it has no deliverable
   * address or the broker refused its reply. Throws when the dead-letter topic cannot be written
   * either (Kafka down), and when a forward failed for a reason other than the broker refusing it
   * for good (the request topic itself is not the request's fault): the batch is tried again, and
   * what was delivered meanwhile (added to `delivered`) is not sent twice. Replies that could not
   * be delivered are added to `refused` with their code.
   */
  async deliver(batch: Batch, items: Item[], delivered: Set<string>, beat: () => Promise<void>, refused: Map<Item, string>): Promise<void> {
    const { sender, stats } = this.#d;
    const dlq = (item: Item, error: { code: string; message: string }, minimal = false) =>
      deadLetter(error, item.record, batch, this.#d.deadLetterTopic, minimal);
    const toDlq: { item: Item; error: { code: string; message: string } }[] = [];
    const replies = items.filter((i) => i.out);
    const forwards = replies.filter((i) => i.forwardedTo !== undefined);
    // A partition the request topic just gained is known to exist (this worker routes by it): the
    // reply path's topic snapshot must not be older than that.
    if (forwards.length > 0)
      await this.#d.metadata.partitions(
        forwards.map((i) => ({ topic: this.#d.requestTopic, partition: i.forwardedTo as number })),
        this.#d.metadata.now(),
      );
    let forwarded = 0;
    let unforwarded: string | undefined;
    const results = await sender.deliver(
      replies.map((i) => i.out as OutRecord),
      beat,
    );
    replies.forEach((item, k) => {
      const f = results[k];
      if (!f) {
        delivered.add(item.record.offset);
        if (item.forwardedTo === undefined) stats.replies++;
        else forwarded++;
      } else if (item.forwardedTo !== undefined && f.code !== "REPLY_REFUSED") {
        unforwarded ??= `forwarding to ${this.#d.requestTopic}/${item.forwardedTo} failed: ${f.code}: ${f.reason}`;
      } else {
        toDlq.push({ item, error: { code: f.code, message: f.reason } });
        refused.set(item, f.code);
      }
    });
    if (forwarded > 0) {
      stats.forwarded += forwarded;
      this.#d.events.emit("worker.forwarded", { partition: batch.partition, requests: forwarded });
    }
    if (unforwarded) throw new IddError("UNAVAILABLE", unforwarded);
    for (const item of items) if (!item.out && !item.parsed.ok) toDlq.push({ item, error: item.parsed.error });
    if (toDlq.length === 0) return;
    for (const { item, error } of toDlq) {
      this.#d.limitedLog(
        "warn",
        { code: error.code, reason: error.message.slice(0, 300), partition: batch.partition, offset: item.record.offset },
        "request dead-lettered",
      );
    }
    let left = toDlq;
    const dead = new Map<string, number>();
    for (const minimal of [false, true]) {
      const r = await sender.deliver(
        left.map(({ item, error }) => dlq(item, error, minimal)),
        beat,
      );
      left.forEach(({ item, error }, k) => {
        if (r[k]) return;
        delivered.add(item.record.offset);
        stats.deadLetters++;
        dead.set(error.code, (dead.get(error.code) ?? 0) + 1);
      });
      if (dead.size > 0) {
        const counts = [...dead].map(([code, requests]) => ({ code, requests }));
        this.#d.events.emit("worker.dead_lettered", { partition: batch.partition, counts });
        dead.clear();
      }
      const failed = r.find((f) => f?.code === "REPLY_FAILED");
      if (failed) throw new IddError("UNAVAILABLE", `the dead-letter topic cannot be written: ${failed.reason}`);
      left = left.filter((_, k) => r[k]);
      if (left.length === 0) return;
    }
    for (const { item, error } of left) {
      stats.lost++;
      delivered.add(item.record.offset);
      this.#d.limitedLog(
        "error",
        { code: error.code, partition: batch.partition, offset: item.record.offset, dlq: this.#d.deadLetterTopic },
        "the dead-letter topic refused the record too: request lost",
      );
    }
  }
}
