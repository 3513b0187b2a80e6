/**
 * What the raw phases (overload.ts, hostile.ts) share: the context the harness gives them, and a
 * plain kafkajs producer and consumer that talk to the pool without IdClient.
 */
import { performance } from "node:perf_hooks";
import { type Consumer, type IHeaders, Kafka, logLevel, Partitioners, type Producer } from "kafkajs";
import type { Range } from "../../../src/core/range.js";
import { type IdReply, replyFromJson } from "../../../src/protocol/reply.js";
import { partitionForKey } from "../../../src/transport/kafka/index.js";
import { ServedAdmin } from "../../../stack/kafka-admin.js";
import { type BuiltRequest, correlationKey } from "../../support/hostile-requests.js";

/** What a phase needs from the harness. */
export interface RawPhaseContext {
  brokers: string[];
  requestTopic: string;
  requestPartitions: number;
  dlqTopic: string;
  /** A reply topic of the phase's own, created before the workers started (so their metadata knows it). */
  replyTopic: string;
  replyPartitions: number;
  /** A topic that does not exist. */
  missingTopic: string;
  sequences: string[];
  random: () => number;
  log: (line: string) => void;
  /** Adds one request's outcome to the run's history, in the current phase. */
  record: (r: {
    sequence: string;
    count: number;
    sentAt: number;
    receivedAt: number;
    period?: string | null;
    ranges?: Range[];
    code?: string;
  }) => void;
  /** Counts "Kafka consumer crashed" lines in the worker logs written since `crashMark()` was taken. */
  crashMark: () => () => number;
  /** Sends `n` fresh requests through an IdClient (recorded like the load's); their latencies and failures. */
  fresh: (n: number, timeoutMs: number) => Promise<{ latencies: number[]; failures: string[] }>;
}

export interface RawPhaseResult<S> {
  stats: S;
  notes: string[];
  /** Why the phase failed its checks (empty: passed). */
  failures: string[];
}

// ───────────────────────────── raw traffic ─────────────────────────────

/** One record seen on a topic the phase reads. */
export interface Seen {
  at: number;
  topic: string;
  value: Buffer | null;
  headers: IHeaders;
}

/** Where a produced request landed. */
export interface Placed {
  req: BuiltRequest;
  sentAt: number;
  partition: number;
  offset: string;
}

export const percentile = (sorted: number[], q: number) =>
  sorted.length === 0 ? null : (sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] as number);

export const headerText = (h: IHeaders, name: string) => {
  const v = h[name];
  const one = Array.isArray(v) ? v[0] : v;
  return one === undefined ? undefined : one.toString();
};

/**
 * A plain kafkajs producer and a consumer (fresh group, from the beginning) on the topics a phase
 * reads. The producer never retries: a request written twice would be answered twice, and the
 * phases count answers per request.
 */
export class RawTraffic {
  /** Records seen, by correlation key. */
  readonly seen = new Map<string, Seen[]>();
  /** Records without a kafka_correlationId header. */
  uncorrelated = 0;
  /** The idd_dlqCode of each of those (undefined: none), e.g. BATCH_UNREADABLE for a batch no one could decode. */
  readonly uncorrelatedCodes: (string | undefined)[] = [];
  readonly #brokers: string[];
  readonly #groupId: string;
  readonly #producer: Producer;
  readonly #consumer: Consumer;

  private constructor(kafka: Kafka, brokers: string[], groupId: string) {
    this.#brokers = brokers;
    this.#groupId = groupId;
    this.#producer = kafka.producer({
      allowAutoTopicCreation: false,
      idempotent: false,
      retry: { retries: 0 },
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    this.#consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 50, maxBytesPerPartition: 2 * 1024 * 1024, sessionTimeout: 30_000 });
  }

  static async open(brokers: string[], name: string, topics: string[]): Promise<RawTraffic> {
    const kafka = new Kafka({ clientId: name, brokers, logLevel: logLevel.NOTHING, retry: { retries: 5 } });
    const t = new RawTraffic(kafka, brokers, `${name}-${Math.random().toString(36).slice(2, 10)}`);
    try {
      await t.#start(topics);
    } catch (e) {
      await t.close();
      throw e;
    }
    return t;
  }

  async #start(topics: string[]): Promise<void> {
    await this.#producer.connect();
    const admin = new ServedAdmin(this.#brokers, `${this.#groupId}-admin`);
    // Where each partition ends now: what is older belongs to an earlier phase (the full profile runs
    // each raw phase twice on the same topics) and is skipped.
    const ends = new Map<string, bigint>();
    const want = new Map<string, number>();
    try {
      for (const topic of topics) {
        const offsets = await admin.topicOffsets(topic);
        want.set(topic, offsets.length);
        for (const o of offsets) ends.set(`${topic}/${o.partition}`, BigInt(o.high));
      }
    } finally {
      await admin.close();
    }
    let joined!: () => void;
    const ready = new Promise<void>((r) => {
      joined = r;
    });
    // A single member gets every partition: wait for that, so nothing is answered before we read.
    this.#consumer.on(this.#consumer.events.GROUP_JOIN, (e) => {
      const a = e.payload.memberAssignment;
      if ([...want].every(([topic, n]) => (a[topic]?.length ?? 0) === n)) joined();
    });
    await this.#consumer.connect();
    await this.#consumer.subscribe({ topics, fromBeginning: true }); // a fresh group: nothing after `ends` is missed
    await this.#consumer.run({
      partitionsConsumedConcurrently: 4,
      eachBatch: async ({ batch }) => {
        const at = performance.now();
        const from = ends.get(`${batch.topic}/${batch.partition}`) ?? 0n;
        for (const m of batch.messages) {
          if (BigInt(m.offset) < from) continue;
          const headers = m.headers ?? {};
          const v = headers.kafka_correlationId;
          const id = Array.isArray(v) ? v[0] : v;
          if (id === undefined) {
            this.uncorrelated++;
            this.uncorrelatedCodes.push(headers.idd_dlqCode?.toString());
            continue;
          }
          const key = correlationKey(id);
          const list = this.seen.get(key);
          const s: Seen = { at, topic: batch.topic, value: m.value, headers };
          if (list) list.push(s);
          else this.seen.set(key, [s]);
        }
      },
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      ready,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the raw consumer was not assigned ${topics.join(", ")} within 60 s`)), 60_000);
      }),
    ]).finally(() => clearTimeout(timer));
    // Skip what earlier phases left instead of reading it (it would be ignored anyway).
    for (const [tp, offset] of ends) {
      const i = tp.lastIndexOf("/");
      if (offset > 0n) this.#consumer.seek({ topic: tp.slice(0, i), partition: Number(tp.slice(i + 1)), offset: offset.toString() });
    }
  }

  /** One produce request to the request topic, each record on the partition of its key; where each landed. */
  /** Sends `reqs` in one produce request, its batches compressed with kafkajs's codec id `compression` (default none). */
  async send(topic: string, partitions: number, reqs: BuiltRequest[], compression = 0): Promise<Placed[]> {
    const parts = reqs.map((r) => partitionForKey(topic, r.message.key as string, partitions));
    const sentAt = performance.now();
    const meta = await this.#producer.send({
      topic,
      acks: -1,
      timeout: 60_000,
      compression,
      messages: reqs.map((r, i) => ({ ...r.message, partition: parts[i] as number })),
    });
    const next = new Map(meta.map((m) => [m.partition, BigInt(m.baseOffset ?? m.offset ?? "-1")]));
    return reqs.map((req, i) => {
      const p = parts[i] as number;
      const offset = next.get(p) ?? -1n;
      next.set(p, offset + 1n);
      return { req, sentAt, partition: p, offset: offset.toString() };
    });
  }

  #closed = false;

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#consumer.disconnect().catch(() => {});
    await this.#producer.disconnect().catch(() => {});
  }
}

/** Runs `units` through `send`, at most `inFlight` at once; the first failure is rethrown after all settled. */
export async function pump<T, R>(units: T[], inFlight: number, send: (u: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  let next = 0;
  let failure: unknown;
  await Promise.all(
    Array.from({ length: Math.min(inFlight, units.length) }, async () => {
      while (next < units.length && failure === undefined) {
        const u = units[next++] as T;
        try {
          out.push(await send(u));
        } catch (e) {
          failure ??= e;
        }
      }
    }),
  );
  if (failure !== undefined) throw failure;
  return out;
}

/** After everything arrived: how long to keep reading so a duplicate would show. */
export const SETTLE_MS = 1500;

export const pick = <T>(list: readonly T[], random: () => number) => list[Math.floor(random() * list.length)] as T;

export function shuffle<T>(list: T[], random: () => number): T[] {
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [list[i], list[j]] = [list[j] as T, list[i] as T];
  }
  return list;
}

export const sumRanges = (ranges: Range[]) => ranges.reduce((s, r) => s + (r.last - r.first + 1n), 0n);

/**
 * Adds a request's replies to the run's history: the first one (numbers, or its error code when it
 * is a request that should get numbers), and any later one whose numbers differ (those were issued
 * too). A later identical answer is only a duplicate reply, counted by the caller.
 */
export function recordReplies(
  ctx: RawPhaseContext,
  p: Placed,
  replies: { x: Seen; reply: IdReply | undefined }[],
  wantsNumbers: boolean,
): void {
  let firstOk: Range[] | undefined;
  for (const [k, { x, reply }] of replies.entries()) {
    if (!reply) continue;
    const base = { sequence: p.req.sequence, count: 1, sentAt: p.sentAt, receivedAt: x.at };
    if (reply.status === "OK") {
      if (firstOk && sameRanges(firstOk, reply.ranges)) continue;
      firstOk ??= reply.ranges;
      const wrong = wantsNumbers && sumRanges(reply.ranges) !== 1n;
      ctx.record({ ...base, period: reply.period, ranges: reply.ranges, ...(wrong && { code: "WRONG_COUNT" }) });
    } else if (wantsNumbers && k === 0) ctx.record({ ...base, code: reply.error?.code ?? "INTERNAL" });
  }
}

function sameRanges(a: Range[], b: Range[]): boolean {
  return a.length === b.length && a.every((r, i) => r.first === b[i]?.first && r.last === b[i]?.last);
}

export function safeReply(value: Buffer | null) {
  try {
    return replyFromJson(String(value));
  } catch {
    return undefined;
  }
}

/** What a raw phase reads and writes of the harness's phase state. */
export interface RawPhaseState {
  kind: string;
  notes: string[];
  failures: string[];
  healedAt?: number;
}

/** Runs a raw phase; its failed checks, and a step that could not run at all, fail the phase. */
export async function runRawPhase<S>(
  p: RawPhaseState,
  step: () => Promise<RawPhaseResult<S>>,
  o: { exits: () => number; log: (line: string) => void },
): Promise<S | undefined> {
  const exitsBefore = o.exits();
  try {
    const r = await step();
    p.notes.push(...r.notes);
    p.failures.push(...r.failures);
    const exits = o.exits() - exitsBefore;
    if (exits > 0) p.failures.push(`${exits} workers exited on their own during the phase`);
    for (const f of p.failures) o.log(`  CHECK FAILED: ${f}`);
    return r.stats;
  } catch (e) {
    p.failures.push(`${p.kind} step failed: ${(e as Error).message}`);
    o.log(`  CHECK FAILED: ${p.kind} step failed: ${(e as Error).message}`);
    return undefined;
  } finally {
    p.healedAt = Date.now();
  }
}
