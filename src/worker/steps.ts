/**
 * A worker's steps: a fetched batch is handled in steps of at most IDD_STEP_RECORDS records, each
 * parsed, answered or forwarded (router.ts), delivered (delivery.ts) and committed, in offset order
 * per partition. A batch tried again (kafkajs hands it again after an error) sends nothing twice.
 */
import type { Logger } from "pino";
import { IddError } from "../core/errors.js";
import type { Instrumentation } from "../core/events.js";
import type { PoolDuty } from "../core/pool-duty.js";
import type { Ownership } from "../ownership/ownership.js";
import { vouched } from "../ownership/vouched.js";
import { forwards } from "../protocol/headers.js";
import { parseRequest, type Rejected, type ReplyAddress, type RequestDecoder, type RequestLimits } from "../protocol/request.js";
import type { Batch, BatchContext, InRecord, Unreadable } from "../transport/kafka/index.js";
import type { TopicMetadata } from "../transport/topic-metadata.js";
import type { Delivery } from "./delivery.js";
import { type Item, type Pending, replyError } from "./item.js";
import type { Router } from "./router.js";
import type { WorkerStats } from "./stats.js";

export interface StepsDeps {
  /** At most this many records a step (IDD_STEP_RECORDS). */
  stepRecords: number;
  /** What a request may be (sizes, idd's own topics): parseRequest's; `requestTopic` names the unreadable. */
  limits: RequestLimits;
  decoder: RequestDecoder;
  /** The reply topics' partition counts, checked before a step answers. */
  metadata: TopicMetadata;
  /** The partitions' leases: what a lost partition's steps delivered is forgotten on `revoked`. */
  ownership: Ownership;
  events: Instrumentation;
  /** What the worker that owns partition 0 leads for the pool (the gapless sweep, the samples' retention). */
  duties: PoolDuty[];
  router: Router;
  delivery: Delivery;
  stats: WorkerStats;
  replySchemaId: number;
  clock: () => number;
  log: Logger;
}

/**
 * How long each record was in Kafka before its step began (`now` less its timestamp, at least 0;
 * none for a record without one, which Kafka writes as -1), by who sent it: a client, or a worker
 * that forwarded it home (the hop's wait).
 */
function waits(records: readonly InRecord[], now: number): { client: number[]; worker: number[] } {
  const out = { client: [] as number[], worker: [] as number[] };
  for (const r of records) {
    const at = Number(r.timestamp);
    if (Number.isFinite(at) && at > 0) (forwards(r.headers) > 0 ? out.worker : out.client).push(Math.max(0, now - at));
  }
  return out;
}

export class Steps {
  readonly #d: StepsDeps;
  /**
   * What a retried batch must not send again: per partition, the offset before which every record
   * was answered, and the offsets of the current step already delivered.
   */
  readonly #doneBefore = new Map<number, number>();
  readonly #delivered = new Map<number, Set<string>>();

  constructor(d: StepsDeps) {
    this.#d = d;
    // A partition lost: what its steps delivered is the next owner's to know.
    d.ownership.onRevoked(({ partition, why }) => {
      if (why !== "partition-lost") return undefined;
      this.#delivered.delete(partition);
      this.#doneBefore.delete(partition);
      return undefined;
    });
  }

  /** The consumer group gave this worker `partitions`: the leases of the others are revoked (I3). */
  assigned(partitions: number[]): void {
    const { events, ownership, duties } = this.#d;
    const { lost, dropped } = ownership.assigned(partitions);
    for (const duty of duties) duty.lead(partitions.includes(0));
    events.emit("worker.assigned", { partitions, lost, droppedNumbers: dropped });
    events.emit("worker.consumer", { running: true });
    this.#d.log.info({ partitions, lost, droppedNumbers: dropped.toString() }, "partitions assigned");
  }

  /** A fetched batch, in steps of at most `stepRecords` records, each answered and committed. */
  async handleBatch(batch: Batch, ctx: BatchContext): Promise<void> {
    const n = this.#d.stepRecords;
    for (let from = 0; from < batch.records.length; from += n) {
      if (!ctx.isRunning()) return; // rebalancing: the rest is answered by whoever owns the partition next
      await this.#step(batch, batch.records.slice(from, from + n), ctx);
    }
  }

  /**
   * One step: parse, check reply addresses, answer or forward, deliver (dead-lettering what cannot
   * be delivered), commit. Records delivered by an earlier try of the same batch are not sent again.
   */
  async #step(batch: Batch, records: InRecord[], ctx: BatchContext): Promise<void> {
    const { log, stats, events } = this.#d;
    const started = performance.now();
    const { partition } = batch;
    const delivered = this.#delivered.get(partition) ?? new Set<string>();
    this.#delivered.set(partition, delivered);
    const doneBefore = this.#doneBefore.get(partition) ?? -1;
    const fresh = records.filter((r) => Number(r.offset) >= doneBefore);
    const todo = fresh.filter((r) => !delivered.has(r.offset));
    // Counted by the step that succeeds (a failed one reports nothing): once each.
    const waitsMs = waits(fresh, Date.now());
    const items = await this.#parse(todo, partition);
    const parsed = performance.now();
    stats.requests += items.length;
    for (const item of items) if (!item.parsed.ok && item.parsed.address) replyError(item, this.#d.replySchemaId, this.#d.clock());
    // A step starts only while the group vouches for this worker (design §5.17): a worker cut from
    // the coordinator still fetches, and must not answer what another owner answers by then. What
    // a step issued is published (or released by the dispenser when the step fails): never dropped.
    if (!(await vouched(ctx, partition, log))) return;
    const beat = () => ctx.heartbeat();
    const refused = new Map<Item, string>();
    // Forwards leave as soon as they are routed, while the dispenser answers the rest; the step
    // ends (and commits) only once both are delivered, so a retried batch knows what went out.
    const forwarding: Promise<void>[] = [];
    const forward = (away: Pending[]) => {
      const sent = this.#d.delivery.deliver(batch, away, delivered, beat, refused);
      // Handled now, judged below: a forward that fails while the step still waits on its own
      // replies was an unhandled rejection, and Node ended the worker (a chaos run, Kafka restarting).
      sent.catch(() => {});
      forwarding.push(sent);
    };
    let issued = Number.NaN;
    let failure: { error: unknown } | undefined;
    try {
      await this.#d.router.answerOrForward(
        partition,
        items.filter((i): i is Pending => i.parsed.ok),
        beat,
        forward,
      );
      issued = performance.now();
      for (const item of items) if (!item.parsed.ok) refused.set(item, item.parsed.error.code);
      await this.#d.delivery.deliver(
        batch,
        items.filter((i) => i.forwardedTo === undefined),
        delivered,
        beat,
        refused,
      );
    } catch (error) {
      failure = { error };
    }
    // The step's own failure is the one thrown, a failed forward's otherwise.
    const forwardFailed = (await Promise.allSettled(forwarding)).find((r) => r.status === "rejected");
    if (failure) throw failure.error;
    if (forwardFailed) throw forwardFailed.reason;
    const deliveredAt = performance.now();
    if (refused.size > 0) this.#reportRefused(partition, refused);
    const last = records.at(-1) as InRecord;
    if (log.isLevelEnabled("debug")) {
      const forwarded = items.filter((i) => i.forwardedTo !== undefined).length;
      log.debug(
        { partition, from: records[0]?.offset, to: last.offset, skipped: records.length - todo.length, forwarded, refused: refused.size },
        "step done",
      );
    }
    ctx.commit(String(Number(last.offset) + 1));
    const lag = Number(batch.highWatermark) - (Number(last.offset) + 1);
    const phases = { parse: parsed - started, issue: issued - parsed, deliver: deliveredAt - issued };
    events.emit("worker.step", {
      partition,
      records: records.length,
      ms: performance.now() - started,
      lag: Math.max(0, lag),
      phases,
      waitsMs,
    });
    this.#doneBefore.set(partition, Number(last.offset) + 1);
    delivered.clear();
    await ctx.heartbeat();
  }

  /** Counts a step's refused requests per sequence (as the request named it) and code, for instrumentation. */
  #reportRefused(partition: number, refused: Map<Item, string>): void {
    const counts = new Map<string, { sequence: string; code: string; requests: number }>();
    for (const [item, code] of refused) {
      const sequence = item.parsed.ok ? item.parsed.request.sequence : item.parsed.sequence;
      const key = `${sequence}\u0000${code}`;
      const count = counts.get(key) ?? { sequence, code, requests: 0 };
      count.requests++;
      counts.set(key, count);
    }
    this.#d.events.emit("worker.refused", { partition, counts: [...counts.values()] });
  }

  /**
   * A batch the consumer could not decode (its one record stands for all of it): nothing in it can
   * be answered, since no reply address can be read; it is dead-lettered whole, and said once.
   */
  #unreadable(record: InRecord, u: Unreadable, partition: number): Rejected {
    const where = `${this.#d.limits.requestTopic}/${partition} offsets ${u.firstOffset}-${u.lastOffset}`;
    this.#d.log.error(
      { partition, ...u, bytes: record.value?.length },
      "a fetched batch could not be decoded: dead-lettered, its requests unanswered",
    );
    this.#d.events.emit("worker.unreadable", {
      partition,
      codec: u.codec,
      records: Number(BigInt(u.lastOffset) - BigInt(u.firstOffset)) + 1,
    });
    const error = new IddError("BATCH_UNREADABLE", `${where} (codec ${u.codec}) could not be decoded: ${u.reason}`);
    return { ok: false, error, format: "avro", requestId: "", sequence: "" };
  }

  /** Parses records (loading unknown schema ids once per step), then checks that reply addresses exist. */
  async #parse(records: InRecord[], partition: number): Promise<Item[]> {
    const { decoder, metadata, limits } = this.#d;
    const fetched = metadata.now(); // every reply topic these records name existed before now (on the snapshot's clock)
    const unknown: number[] = [];
    for (const r of records) {
      if (r.unreadable) continue;
      const id = decoder.unknownSchemaId(r.value);
      if (id !== undefined) unknown.push(id);
    }
    if (unknown.length > 0) await decoder.load(unknown);
    const items: Item[] = new Array(records.length);
    const addressed: ReplyAddress[] = [];
    for (let i = 0; i < records.length; i++) {
      const record = records[i] as InRecord;
      const parsed = record.unreadable ? this.#unreadable(record, record.unreadable, partition) : parseRequest(record, decoder, limits);
      items[i] = { record, parsed };
      if (parsed.address) addressed.push(parsed.address);
    }
    if (addressed.length === 0) return items;
    const counts = await metadata.partitions(addressed, fetched);
    for (const item of items) {
      const a = item.parsed.address;
      if (!a) continue;
      const n = counts.get(a.topic);
      const error =
        n === undefined
          ? new IddError("REPLY_TOPIC_UNKNOWN", `reply topic "${a.topic}" does not exist`)
          : a.partition !== undefined && a.partition >= n
            ? new IddError("REPLY_PARTITION_INVALID", `reply topic "${a.topic}" has ${n} partitions; ${a.partition} is not one`)
            : undefined;
      if (!error) continue;
      const parsed = item.parsed;
      const who = parsed.ok ? parsed.request : parsed;
      item.parsed = { ok: false, error, format: parsed.format, requestId: who.requestId, sequence: who.sequence };
    }
    return items;
  }
}
