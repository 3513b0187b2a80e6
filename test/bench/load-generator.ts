/**
 * The open-loop load generator: a raw kafkajs producer and consumer, not idd's client. It publishes
 * single-number JSON requests on idd's wire contract (key = sequence name, headers
 * kafka_correlationId / kafka_replyTopic / kafka_replyPartition) whether or not earlier ones were
 * answered, and matches replies on its own reply topic by correlation id.
 *
 * - burst: N requests published as fast as the broker takes them (sendBatch calls of `chunk`
 *   records, `inFlight` of them at once); latency counts from the call that published a request.
 * - paced: `rate` requests a second for `seconds`, published every `tickMs` in small batches;
 *   latency counts from each request's scheduled time (no coordinated omission: a generator that
 *   falls behind shows as latency, and as `lagMs`).
 *
 * Memory stays bounded for millions of requests: per request only typed-array slots (send time,
 * latency, reply count); the correlation id carries the run's tag and the request's index.
 */
import { randomBytes } from "node:crypto";
import { type Consumer, type ICustomPartitioner, type IHeaders, Kafka, logLevel, Partitioners, type Producer } from "kafkajs";
import type { KeyPartitioner } from "../../src/transport/kafka/index.js";
// Every Kafka codec in kafkajs's registry, for generators that compress (kafkajs alone has gzip).
import "../../src/transport/kafka/codecs.js";
import { ServedAdmin } from "../../stack/kafka-admin.js";

/**
 * burst: N requests as fast as the broker takes them; backlog: the same, published while the
 * target is paused (`hold` is called before and `release` after), so the target starts from a
 * standing backlog; paced: a fixed rate for some seconds, spread evenly over the sequences, or with
 * `jump`, the first sequence's rate multiplied by `factor` from `atSeconds` on (the total rate grows
 * by as much; the result's `window` holds the latencies from the jump on). `sequences` replaces the
 * generator's sequence names for one run (e.g. names created just before it).
 */
export type Plan = (
  | { kind: "burst"; requests: number }
  | { kind: "backlog"; requests: number; hold: () => void; release: () => void }
  | { kind: "paced"; rate: number; seconds: number; jump?: { atSeconds: number; factor: number } }
) & { sequences?: string[] };

/** When each request of a paced run is due and which sequence it names. */
interface Schedule {
  requests: number;
  /** Request i's due time, ms after the start. */
  at(i: number): number;
  /** How many requests are due `ms` after the start. */
  due(ms: number): number;
  /** Index of request i's sequence. */
  sequence(i: number): number;
  /** First request of the reported window (the jump). */
  windowFrom: number;
}

/** The paced schedule: `rate` a second over `n` sequences, round-robin; with a jump, sequence 0 × factor from then on. */
export function pacedSchedule(rate: number, seconds: number, n: number, jump?: { atSeconds: number; factor: number }): Schedule {
  const perMs = rate / 1000;
  if (!jump) {
    const requests = Math.round(rate * seconds);
    return {
      requests,
      at: (i) => i / perMs,
      due: (ms) => Math.min(requests, Math.floor(ms * perMs)),
      sequence: (i) => i % n,
      windowFrom: 0,
    };
  }
  const before = Math.round(rate * jump.atSeconds);
  const cycle = n - 1 + jump.factor; // per cycle after the jump: `factor` requests of sequence 0, one of each other
  const perMs2 = (perMs * cycle) / n;
  const jumpMs = jump.atSeconds * 1000;
  const requests = before + Math.round(perMs2 * (seconds * 1000 - jumpMs));
  return {
    requests,
    at: (i) => (i < before ? i / perMs : jumpMs + (i - before) / perMs2),
    due: (ms) => Math.min(requests, ms < jumpMs ? Math.floor(ms * perMs) : before + Math.floor((ms - jumpMs) * perMs2)),
    sequence: (i) => {
      if (i < before) return i % n;
      const k = (i - before) % cycle;
      return k < jump.factor ? 0 : 1 + k - jump.factor;
    },
    windowFrom: before,
  };
}

export interface RunResult {
  requests: number;
  answered: number;
  duplicates: number;
  /** Replies with status ERROR (counted once per request). */
  errors: number;
  /** Requests without a reply when the run gave up waiting. */
  missing: number;
  numbers: number;
  /** First publish call (backlog: the release) to last reply, ms. */
  elapsedMs: number;
  /** First publish call to the last publish acknowledged, ms. */
  publishMs: number;
  /** Paced: the most a publish call started after its requests were due, ms. */
  lagMs: number;
  /** Sorted latencies of the answered requests, ms. */
  latencies: Float64Array;
  /** A paced run with a jump: sorted latencies of the answered requests from the jump on, ms. */
  window?: Float64Array;
  firstError?: string;
}

export interface GeneratorOptions {
  brokers: string[];
  /** Sequence names (message keys); requests go to them round-robin. */
  sequences: string[];
  /** Records per sendBatch call (default 500). */
  chunk?: number;
  /** sendBatch calls in flight at once in bursts (default 8). */
  inFlight?: number;
  tickMs?: number;
  /** Send kafka_replyPartition (4-byte big-endian 0) with each request (default true). */
  replyPartitionHeader?: boolean;
  /** Give up waiting for replies after this long without one (default 30 s). */
  idleTimeoutMs?: number;
  /**
   * Places each request by its key and the request topic's partition count, as a client's
   * partitioner would (e.g. test/support/partitioners.ts's librdkafkaDefault). Default: Kafka's
   * Java murmur2, which puts every request on its sequence's home partition.
   */
  partitioner?: KeyPartitioner;
  /** How its request batches are compressed: kafkajs's codec id (idd's seam registers every codec; default none). */
  compression?: number;
  progress?: (line: string) => void;
}

interface Run {
  tag: number;
  requests: number;
  names: string[];
  keys: Buffer[];
  sequence: (i: number) => number;
  sendAt: Float64Array;
  latency: Float64Array;
  replies: Uint8Array;
  answered: number;
  duplicates: number;
  errors: number;
  numbers: number;
  lastReplyAt: number;
  firstError?: string;
  done: () => void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Sequence names spread evenly over a topic's partitions by kafkajs's default (Java-compatible)
 * partitioner. `accept`, when given, is asked about each name whose partition still has room, and
 * a name it refuses is skipped.
 */
export function spreadSequences(
  prefix: string,
  partitions: number,
  perPartition: number,
  accept?: (name: string, partition: number) => boolean,
): string[] {
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: partitions }, (_, i) => ({
    partitionId: i,
    leader: 0,
    replicas: [0],
    isr: [0],
    partitionErrorCode: 0,
  }));
  const buckets: string[][] = Array.from({ length: partitions }, () => []);
  for (let i = 0; buckets.some((b) => b.length < perPartition); i++) {
    const name = `${prefix}-${i}`;
    const p = partitioner({ topic: "t", partitionMetadata, message: { key: name, value: null } });
    if ((buckets[p] as string[]).length < perPartition && (accept?.(name, p) ?? true)) (buckets[p] as string[]).push(name);
  }
  return buckets.flat();
}

export class LoadGenerator {
  readonly replyTopic: string;
  readonly #o: Required<Omit<GeneratorOptions, "progress" | "partitioner">> & Pick<GeneratorOptions, "progress" | "partitioner">;
  readonly #kafka: Kafka;
  readonly #admin: ServedAdmin;
  #producer!: Producer;
  #consumer!: Consumer;
  #run: Run | undefined;
  /** Replies that belong to no current run (late answers to an earlier run). */
  stray = 0;
  readonly #keys: Buffer[];
  readonly #partitionHeader = Buffer.from([0, 0, 0, 0]);

  private constructor(o: GeneratorOptions) {
    this.#o = { chunk: 500, inFlight: 8, tickMs: 5, replyPartitionHeader: true, idleTimeoutMs: 30_000, compression: 0, ...o };
    this.replyTopic = `bench.replies.${randomBytes(4).toString("hex")}`;
    this.#kafka = new Kafka({ clientId: "bench-generator", brokers: o.brokers, logLevel: logLevel.NOTHING });
    this.#admin = new ServedAdmin(o.brokers, "bench-generator");
    this.#keys = o.sequences.map((s) => Buffer.from(s, "utf8"));
  }

  static async start(o: GeneratorOptions): Promise<LoadGenerator> {
    const g = new LoadGenerator(o);
    await g.#start();
    return g;
  }

  async #start(): Promise<void> {
    await this.#admin.createTopics([{ topic: this.replyTopic, partitions: 1 }]);
    const own = this.#o.partitioner;
    const createPartitioner: ICustomPartitioner = own
      ? () =>
          ({ partitionMetadata, message }) =>
            own(message.key == null ? null : Buffer.from(message.key), partitionMetadata.length)
      : Partitioners.DefaultPartitioner;
    this.#producer = this.#kafka.producer({ allowAutoTopicCreation: false, idempotent: false, createPartitioner });
    await this.#producer.connect();
    this.#consumer = this.#kafka.consumer({ groupId: `bench-generator-${randomBytes(4).toString("hex")}`, maxWaitTimeInMs: 50 });
    let assigned!: () => void;
    const ready = new Promise<void>((r) => {
      assigned = r;
    });
    this.#consumer.on(this.#consumer.events.GROUP_JOIN, (e) => {
      if ((e.payload.memberAssignment[this.replyTopic] ?? []).includes(0)) assigned();
    });
    await this.#consumer.connect();
    await this.#consumer.subscribe({ topic: this.replyTopic, fromBeginning: true });
    await this.#consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) this.#onReply(m.headers, m.value);
      },
    });
    await ready;
  }

  /** Creates a request topic (the echo service's; idd workers create their own). */
  async createTopic(topic: string, partitions: number): Promise<void> {
    await this.#admin.createTopics([{ topic, partitions }]);
  }

  async deleteTopics(topics: string[]): Promise<void> {
    await this.#admin.deleteTopics(topics);
  }

  #onReply(headers: IHeaders | undefined, value: Buffer | null): void {
    const now = performance.now();
    const run = this.#run;
    const h = headers?.kafka_correlationId;
    const c = (Array.isArray(h) ? h[0] : h) as Buffer | string | undefined;
    if (!run || !Buffer.isBuffer(c) || c.length !== 8 || c.readUInt32BE(0) !== run.tag) {
      this.stray++;
      return;
    }
    const i = c.readUInt32BE(4);
    if (i >= run.requests) {
      this.stray++;
      return;
    }
    const seen = run.replies[i] as number;
    if (seen > 0) {
      run.duplicates++;
      if (seen < 255) run.replies[i] = seen + 1;
      return;
    }
    run.replies[i] = 1;
    run.latency[i] = now - (run.sendAt[i] as number);
    run.answered++;
    run.lastReplyAt = now;
    try {
      const reply = JSON.parse((value as Buffer).toString("utf8")) as {
        status: string;
        ranges: { first: number; last: number }[];
        error: unknown;
      };
      if (reply.status !== "OK") {
        run.errors++;
        run.firstError ??= JSON.stringify(reply.error);
      }
      for (const r of reply.ranges) run.numbers += Number(r.last) - Number(r.first) + 1;
    } catch (e) {
      run.errors++;
      run.firstError ??= `undecodable reply: ${(e as Error).message}`;
    }
    if (run.answered === run.requests) run.done();
  }

  #value(i: number, tag: number, sequence: string): Buffer {
    return Buffer.from(`{"requestId":"${tag.toString(16)}-${i}","sequence":"${sequence}","count":1}`);
  }

  /** Publishes requests [from, to) of `run` to `topic` in one sendBatch call. */
  #publish(topic: string, run: Run, from: number, to: number): Promise<unknown> {
    const messages = new Array(to - from);
    const replyTopic = this.replyTopic;
    for (let i = from; i < to; i++) {
      const s = run.sequence(i);
      const correlation = Buffer.allocUnsafe(8);
      correlation.writeUInt32BE(run.tag, 0);
      correlation.writeUInt32BE(i, 4);
      const headers: IHeaders = { kafka_correlationId: correlation, kafka_replyTopic: replyTopic };
      if (this.#o.replyPartitionHeader) headers.kafka_replyPartition = this.#partitionHeader;
      messages[i - from] = { key: run.keys[s], value: this.#value(i, run.tag, run.names[s] as string), headers };
    }
    return this.#producer.sendBatch({ acks: -1, compression: this.#o.compression, topicMessages: [{ topic, messages }] });
  }

  /** Runs one plan against `topic` and waits for every reply (or `idleTimeoutMs` without one). */
  async run(topic: string, plan: Plan): Promise<RunResult> {
    const names = plan.sequences ?? this.#o.sequences;
    const n = names.length;
    const schedule = plan.kind === "paced" ? pacedSchedule(plan.rate, plan.seconds, n, plan.jump) : undefined;
    const requests = plan.kind === "paced" ? (schedule as Schedule).requests : plan.requests;
    let done!: () => void;
    const allAnswered = new Promise<void>((r) => {
      done = r;
    });
    const run: Run = {
      tag: randomBytes(4).readUInt32BE(0),
      requests,
      names,
      keys: plan.sequences ? names.map((x) => Buffer.from(x, "utf8")) : this.#keys,
      sequence: schedule ? schedule.sequence : (i) => i % n,
      sendAt: new Float64Array(requests),
      latency: new Float64Array(requests),
      replies: new Uint8Array(requests),
      answered: 0,
      duplicates: 0,
      errors: 0,
      numbers: 0,
      lastReplyAt: 0,
      done,
    };
    this.#run = run;
    const { chunk } = this.#o;
    let acked = 0;
    let lastAckAt = 0;
    let sendError: Error | undefined;
    const inFlight = new Set<Promise<unknown>>();
    /** `scheduled`: request i's send time, when it is the schedule's (paced) rather than now (burst). */
    const publish = (from: number, to: number, scheduled?: (i: number) => number) => {
      const now = performance.now();
      for (let i = from; i < to; i++) run.sendAt[i] = scheduled ? scheduled(i) : now;
      const p = this.#publish(topic, run, from, to).then(
        () => {
          acked += to - from;
          lastAckAt = performance.now();
        },
        (e: Error) => {
          sendError ??= e;
        },
      );
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    };

    if (plan.kind === "backlog") plan.hold();
    const start = performance.now();
    const ticker = this.#ticker(run, start, () => acked);
    let lagMs = 0;
    if (plan.kind !== "paced") {
      for (let from = 0; from < requests && !sendError; from += chunk) {
        while (inFlight.size >= this.#o.inFlight) await Promise.race(inFlight);
        publish(from, Math.min(from + chunk, requests));
      }
    } else {
      const s = schedule as Schedule;
      const scheduled = (i: number) => start + s.at(i);
      let sent = 0;
      for (let tick = 1; sent < requests && !sendError; tick++) {
        const dueAt = start + tick * this.#o.tickMs;
        const wait = dueAt - performance.now();
        if (wait > 0) await sleep(wait);
        const now = performance.now();
        const due = s.due(now - start);
        if (due > sent) lagMs = Math.max(lagMs, now - scheduled(sent));
        while (sent < due) {
          const to = Math.min(due, sent + chunk);
          publish(sent, to, scheduled);
          sent = to;
        }
      }
    }
    await Promise.all(inFlight);
    if (plan.kind === "backlog") plan.release();
    const from = plan.kind === "backlog" ? performance.now() : start;
    if (sendError) throw sendError;
    // Wait for the replies; give up after idleTimeoutMs without progress.
    for (let seen = -1; run.answered < requests && run.answered !== seen; ) {
      seen = run.answered;
      let idle: NodeJS.Timeout | undefined;
      await Promise.race([allAnswered, new Promise((r) => (idle = setTimeout(r, this.#o.idleTimeoutMs)))]);
      clearTimeout(idle);
    }
    clearInterval(ticker);
    this.#run = undefined;
    const answered = run.latency.length === run.answered ? run.latency : compact(run);
    const window = schedule?.windowFrom ? compact(run, schedule.windowFrom).sort() : undefined;
    answered.sort();
    const r: RunResult = {
      requests,
      answered: run.answered,
      duplicates: run.duplicates,
      errors: run.errors,
      missing: requests - run.answered,
      numbers: run.numbers,
      elapsedMs: (run.answered > 0 ? run.lastReplyAt : performance.now()) - from,
      publishMs: lastAckAt - start,
      lagMs,
      latencies: answered,
      ...(window && { window }),
    };
    if (run.firstError !== undefined) r.firstError = run.firstError;
    return r;
  }

  /** Prints progress every 5 s while a run lasts longer than that. */
  #ticker(run: Run, start: number, acked: () => number): NodeJS.Timeout {
    const t = setInterval(() => {
      const s = ((performance.now() - start) / 1000).toFixed(0);
      this.#o.progress?.(`    … ${s} s: ${acked()} published, ${run.answered} of ${run.requests} answered`);
    }, 5000);
    t.unref();
    return t;
  }

  async close(): Promise<void> {
    await this.#consumer.disconnect().catch(() => {});
    await this.#producer.disconnect().catch(() => {});
    await this.#admin.deleteTopics([this.replyTopic]);
    await this.#admin.close().catch(() => {});
  }
}

/** The latencies of the answered requests from `from` on. */
function compact(run: Run, from = 0): Float64Array {
  let n = 0;
  for (let i = from; i < run.requests; i++) if (run.replies[i] !== 0) n++;
  const out = new Float64Array(n);
  let j = 0;
  for (let i = from; i < run.requests; i++) if (run.replies[i] !== 0) out[j++] = run.latency[i] as number;
  return out;
}

/** The q-quantile (0..1) of sorted values. */
export function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] as number;
}
