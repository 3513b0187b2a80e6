/**
 * The chaos phases that talk to the pool through a plain kafkajs producer and consumer instead of
 * IdClient (harness.ts runs them like every other phase):
 *
 * - `overload`: an open-loop burst of single-number JSON requests, published as fast as the
 *   producer goes, answered on a reply topic of its own; every request must be answered exactly
 *   once, and its numbers join the run's history (G1, G2, G4 over all clients).
 * - `hostile`: hostile requests (test/support/hostile-requests.ts) interleaved with good ones;
 *   every good one answered exactly once with numbers, every hostile one dead-lettered with its code
 *   or answered with its error code, exactly once; no consumer crash; fresh requests answered fast
 *   afterwards.
 */
import { performance } from "node:perf_hooks";
import { type Consumer, type IHeaders, Kafka, logLevel, Partitioners, type Producer } from "kafkajs";
import { type IdReply, type Range, replyFromJson } from "../../src/protocol/reply.js";
import { partitionForKey } from "../../src/transport/kafka.js";
import {
  type BuiltRequest,
  correlationKey,
  goodRequest,
  HOSTILE_KINDS,
  type HostileKind,
  hostileRequest,
  LARGE_RECORD_BYTES,
} from "../support/hostile-requests.js";
import { poll, sleep } from "../support/wait.js";

// ───────────────────────────── settings and results ─────────────────────────────

export interface OverloadSettings {
  /** Single-number requests in the burst. */
  requests: number;
  /** Records per produce request, and produce requests in flight at once. */
  chunk: number;
  inFlight: number;
  /** How long the pool may take to answer the whole burst once it is published. */
  drainTimeoutMs: number;
}

export interface HostileSettings {
  good: number;
  /** Hostile requests per kind. */
  perKind: Record<HostileKind, number>;
  chunk: number;
  inFlight: number;
  drainTimeoutMs: number;
  /** Fresh requests sent after the hostile stream was handled, and how fast each must be answered. */
  freshRequests: number;
  freshMaxMs: number;
}

export interface OverloadStats {
  requests: number;
  /** From the first produce request to the last acknowledgement. */
  publishMs: number;
  /** From the first produce request to the last first reply (null: not every request was answered). */
  drainMs: number | null;
  /** Requests answered per second over the drain. */
  repliesPerSecond: number | null;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  answered: number;
  missing: number;
  /** Replies beyond the first per correlation id. */
  duplicates: number;
  /** Error replies by code (typed, so accounted for; listed in the notes). */
  errors: Record<string, number>;
  /** "Kafka consumer crashed" lines in the worker logs during the phase. */
  crashes: number;
}

export interface KindStats {
  expected: string;
  sent: number;
  asExpected: number;
  /** Answered, but not as expected (wrong code, wrong outcome, numbers for a hostile request). */
  wrong: number;
  missing: number;
  duplicates: number;
}

export interface HostileStats {
  /** Per kind, plus "good". */
  kinds: Record<string, KindStats>;
  /** Dead letters whose idd_dlqSource is not the request's topic/partition/offset. */
  badSources: number;
  /** From the first produce request until every request was answered or dead-lettered. */
  drainMs: number | null;
  crashes: number;
  fresh: { requests: number; ok: number; maxMs: number | null; p50Ms: number | null };
}

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
interface Seen {
  at: number;
  topic: string;
  value: Buffer | null;
  headers: IHeaders;
}

/** Where a produced request landed. */
interface Placed {
  req: BuiltRequest;
  sentAt: number;
  partition: number;
  offset: string;
}

const percentile = (sorted: number[], q: number) =>
  sorted.length === 0 ? null : (sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] as number);

const headerText = (h: IHeaders, name: string) => {
  const v = h[name];
  const one = Array.isArray(v) ? v[0] : v;
  return one === undefined ? undefined : one.toString();
};

/**
 * A plain kafkajs producer and a consumer (fresh group, from the beginning) on the topics a phase
 * reads. The producer never retries: a request written twice would be answered twice, and the
 * phases count answers per request.
 */
class RawTraffic {
  /** Records seen, by correlation key. */
  readonly seen = new Map<string, Seen[]>();
  /** Records without a kafka_correlationId header. */
  uncorrelated = 0;
  readonly #kafka: Kafka;
  readonly #producer: Producer;
  readonly #consumer: Consumer;

  private constructor(kafka: Kafka, groupId: string) {
    this.#kafka = kafka;
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
    const t = new RawTraffic(kafka, `${name}-${Math.random().toString(36).slice(2, 10)}`);
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
    const admin = this.#kafka.admin();
    await admin.connect();
    // Where each partition ends now: what is older belongs to an earlier phase (the full profile runs
    // each raw phase twice on the same topics) and is skipped.
    const ends = new Map<string, bigint>();
    const want = new Map<string, number>();
    try {
      for (const topic of topics) {
        const offsets = await admin.fetchTopicOffsets(topic);
        want.set(topic, offsets.length);
        for (const o of offsets) ends.set(`${topic}/${o.partition}`, BigInt(o.high));
      }
    } finally {
      await admin.disconnect();
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
  async send(topic: string, partitions: number, reqs: BuiltRequest[]): Promise<Placed[]> {
    const parts = reqs.map((r) => partitionForKey(topic, r.message.key as string, partitions));
    const sentAt = performance.now();
    const meta = await this.#producer.send({
      topic,
      acks: -1,
      timeout: 60_000,
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
async function pump<T, R>(units: T[], inFlight: number, send: (u: T) => Promise<R>): Promise<R[]> {
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
const SETTLE_MS = 1500;

const pick = <T>(list: readonly T[], random: () => number) => list[Math.floor(random() * list.length)] as T;

function shuffle<T>(list: T[], random: () => number): T[] {
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [list[i], list[j]] = [list[j] as T, list[i] as T];
  }
  return list;
}

const sumRanges = (ranges: Range[]) => ranges.reduce((s, r) => s + (r.last - r.first + 1n), 0n);

// ───────────────────────────── overload ─────────────────────────────

export async function runOverload(ctx: RawPhaseContext, s: OverloadSettings): Promise<RawPhaseResult<OverloadStats>> {
  const notes: string[] = [];
  const failures: string[] = [];
  const crashes = ctx.crashMark();
  const traffic = await RawTraffic.open(ctx.brokers, "idd-chaos-overload", [ctx.replyTopic]);
  const stats: OverloadStats = {
    requests: s.requests,
    publishMs: 0,
    drainMs: null,
    repliesPerSecond: null,
    p50Ms: null,
    p99Ms: null,
    maxMs: null,
    answered: 0,
    missing: 0,
    duplicates: 0,
    errors: {},
    crashes: 0,
  };
  try {
    const target = { replyTopic: ctx.replyTopic, replyPartitions: ctx.replyPartitions };
    const reqs = Array.from({ length: s.requests }, (_, i) => goodRequest(pick(ctx.sequences, ctx.random), target, 1, i));
    const chunks: BuiltRequest[][] = [];
    for (let i = 0; i < reqs.length; i += s.chunk) chunks.push(reqs.slice(i, i + s.chunk));
    ctx.log(`  overload: publishing ${s.requests} requests (${chunks.length} produce requests of ${s.chunk}, ${s.inFlight} in flight)`);
    const t0 = performance.now();
    let placed: Placed[] = [];
    try {
      placed = (await pump(chunks, s.inFlight, (c) => traffic.send(ctx.requestTopic, ctx.requestPartitions, c))).flat();
    } catch (e) {
      failures.push(`publishing the burst failed: ${(e as Error).message}`);
    }
    stats.publishMs = performance.now() - t0;
    ctx.log(
      `  overload: ${placed.length} published in ${(stats.publishMs / 1000).toFixed(1)} s (${((placed.length * 1000) / stats.publishMs).toFixed(0)}/s); waiting for the replies`,
    );
    const drained =
      (await poll(() => placed.every((p) => traffic.seen.has(p.req.correlation)), { timeoutMs: s.drainTimeoutMs, everyMs: 50 })) === true;
    if (drained) await sleep(SETTLE_MS);

    const latencies: number[] = [];
    let lastFirst = 0;
    let unparsable = 0;
    for (const p of placed) {
      const seen = traffic.seen.get(p.req.correlation) ?? [];
      const first = seen[0];
      if (!first) {
        stats.missing++;
        ctx.record({ sequence: p.req.sequence, count: 1, sentAt: p.sentAt, receivedAt: performance.now(), code: "NO_REPLY" });
        continue;
      }
      stats.answered++;
      stats.duplicates += seen.length - 1;
      lastFirst = Math.max(lastFirst, first.at);
      latencies.push(first.at - p.sentAt);
      const replies = seen.map((x) => ({ x, reply: safeReply(x.value) }));
      unparsable += replies.filter((r) => !r.reply).length;
      recordReplies(ctx, p, replies, true);
      for (const { reply } of replies) {
        if (reply && reply.status !== "OK") {
          const code = reply.error?.code ?? "INTERNAL";
          stats.errors[code] = (stats.errors[code] ?? 0) + 1;
        }
      }
    }
    latencies.sort((a, b) => a - b);
    stats.p50Ms = percentile(latencies, 0.5);
    stats.p99Ms = percentile(latencies, 0.99);
    stats.maxMs = latencies.at(-1) ?? null;
    if (stats.missing === 0 && placed.length > 0) {
      stats.drainMs = lastFirst - t0;
      stats.repliesPerSecond = (placed.length * 1000) / stats.drainMs;
    }
    stats.crashes = crashes();
    const errs = Object.entries(stats.errors).map(([c, n]) => `${c}:${n}`);
    notes.push(
      `burst ${s.requests} requests published in ${(stats.publishMs / 1000).toFixed(1)} s; ` +
        (stats.drainMs !== null
          ? `drained in ${(stats.drainMs / 1000).toFixed(1)} s (${stats.repliesPerSecond?.toFixed(0)} req/s)`
          : `${stats.missing} NOT ANSWERED within ${s.drainTimeoutMs / 1000} s`) +
        `; latency p50 ${stats.p50Ms?.toFixed(0)} p99 ${stats.p99Ms?.toFixed(0)} max ${stats.maxMs?.toFixed(0)} ms; duplicates ${stats.duplicates}` +
        `${errs.length > 0 ? `; error replies ${errs.join(" ")}` : ""}; consumer crashes ${stats.crashes}`,
    );
    if (stats.missing > 0) failures.push(`${stats.missing} of ${placed.length} burst requests never answered`);
    if (stats.duplicates > 0) failures.push(`${stats.duplicates} duplicate replies to burst requests`);
    if (stats.crashes > 0) failures.push(`${stats.crashes} "Kafka consumer crashed" lines in the worker logs`);
    if (traffic.uncorrelated > 0) failures.push(`${traffic.uncorrelated} replies without kafka_correlationId`);
    if (unparsable > 0) failures.push(`${unparsable} replies that are not JSON IdReplies`);
  } finally {
    await traffic.close();
  }
  return { stats, notes, failures };
}

/**
 * Adds a request's replies to the run's history: the first one (numbers, or its error code when it
 * is a request that should get numbers), and any later one whose numbers differ (those were issued
 * too). A later identical answer is only a duplicate reply, counted by the caller.
 */
function recordReplies(ctx: RawPhaseContext, p: Placed, replies: { x: Seen; reply: IdReply | undefined }[], wantsNumbers: boolean): void {
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

// ───────────────────────────── hostile ─────────────────────────────

export async function runHostile(ctx: RawPhaseContext, s: HostileSettings): Promise<RawPhaseResult<HostileStats>> {
  const notes: string[] = [];
  const failures: string[] = [];
  const crashes = ctx.crashMark();
  const traffic = await RawTraffic.open(ctx.brokers, "idd-chaos-hostile", [ctx.replyTopic, ctx.dlqTopic]);
  const kinds: Record<string, KindStats> = {};
  const stats: HostileStats = { kinds, badSources: 0, drainMs: null, crashes: 0, fresh: { requests: 0, ok: 0, maxMs: null, p50Ms: null } };
  try {
    const target = { replyTopic: ctx.replyTopic, replyPartitions: ctx.replyPartitions, missingTopic: ctx.missingTopic };
    const reqs: BuiltRequest[] = Array.from({ length: s.good }, (_, i) => goodRequest(pick(ctx.sequences, ctx.random), target, 1, i));
    for (const kind of HOSTILE_KINDS)
      for (let i = 0; i < s.perKind[kind]; i++) reqs.push(hostileRequest(kind, pick(ctx.sequences, ctx.random), target, i));
    for (const r of reqs) {
      kinds[r.kind] ??= {
        expected: r.expect.outcome === "numbers" ? "numbers" : `${r.expect.outcome} ${r.expect.code}`,
        sent: 0,
        asExpected: 0,
        wrong: 0,
        missing: 0,
        duplicates: 0,
      };
    }
    shuffle(reqs, ctx.random);
    // Small records in produce requests of `chunk`; large ones (900 KB ids, 300 KB of headers) alone.
    const units: BuiltRequest[][] = [];
    let small: BuiltRequest[] = [];
    for (const r of reqs) {
      if (r.bytes >= LARGE_RECORD_BYTES) units.push([r]);
      else {
        small.push(r);
        if (small.length >= s.chunk) {
          units.push(small);
          small = [];
        }
      }
    }
    if (small.length > 0) units.push(small);
    const bytes = reqs.reduce((n, r) => n + r.bytes, 0);
    ctx.log(
      `  hostile: publishing ${reqs.length} requests (${s.good} good), ${(bytes / 1024 / 1024).toFixed(1)} MB in ${units.length} produce requests`,
    );
    const t0 = performance.now();
    let placed: Placed[] = [];
    try {
      placed = (await pump(units, s.inFlight, (u) => traffic.send(ctx.requestTopic, ctx.requestPartitions, u))).flat();
    } catch (e) {
      failures.push(`publishing the hostile stream failed: ${(e as Error).message}`);
    }
    const drained =
      (await poll(() => placed.every((p) => traffic.seen.has(p.req.correlation)), { timeoutMs: s.drainTimeoutMs, everyMs: 50 })) === true;
    if (drained) {
      stats.drainMs = Math.max(...placed.map((p) => (traffic.seen.get(p.req.correlation)?.[0]?.at ?? t0) - t0));
      await sleep(SETTLE_MS);
    }

    const expectedIds = new Set(placed.map((p) => p.req.correlation));
    for (const p of placed) {
      const k = kinds[p.req.kind] as KindStats;
      k.sent++;
      const seen = traffic.seen.get(p.req.correlation) ?? [];
      const replies = seen.filter((x) => x.topic === ctx.replyTopic);
      const dead = seen.filter((x) => x.topic === ctx.dlqTopic);
      if (seen.length === 0) {
        k.missing++;
        if (p.req.kind === "good")
          ctx.record({ sequence: p.req.sequence, count: 1, sentAt: p.sentAt, receivedAt: performance.now(), code: "NO_REPLY" });
        continue;
      }
      k.duplicates += seen.length - 1;
      const parsed = replies.map((x) => ({ x, reply: safeReply(x.value) }));
      recordReplies(ctx, p, parsed, p.req.kind === "good");
      const e = p.req.expect;
      let ok = false;
      const first = parsed[0];
      if (e.outcome === "numbers") {
        ok = dead.length === 0 && first?.reply?.status === "OK" && sumRanges(first.reply.ranges) === 1n;
      } else if (e.outcome === "error-reply") {
        ok =
          dead.length === 0 &&
          first?.reply?.status === "ERROR" &&
          first.reply.error?.code === e.code &&
          headerText(first.x.headers, "idd_errorCode") === e.code;
      } else {
        const d = dead[0];
        ok = replies.length === 0 && d !== undefined && headerText(d.headers, "idd_dlqCode") === e.code;
        if (d && headerText(d.headers, "idd_dlqSource") !== `${ctx.requestTopic}/${p.partition}/${p.offset}`) stats.badSources++;
      }
      if (ok) k.asExpected++;
      else {
        k.wrong++;
        if (k.wrong <= 3) {
          const got = [
            ...parsed.map(({ reply }) =>
              reply ? `reply ${reply.status}${reply.error ? ` ${reply.error.code}` : ""}` : "unparsable reply",
            ),
            ...dead.map((d) => `dead letter ${headerText(d.headers, "idd_dlqCode")}`),
          ];
          notes.push(`${p.req.kind}: expected ${k.expected}, got ${got.join(", ")}`);
        }
      }
    }
    // Records nobody asked for: answers on our topics to correlation ids we did not send.
    let strangers = 0;
    for (const [id, list] of traffic.seen) if (!expectedIds.has(id)) strangers += list.length;

    stats.crashes = crashes();
    // The raw clients are done: closed first, so fresh requests measure the pool, not this process's load.
    await traffic.close();
    const f = await ctx.fresh(s.freshRequests, Math.max(5000, s.freshMaxMs * 5));
    f.latencies.sort((a, b) => a - b);
    stats.fresh = {
      requests: s.freshRequests,
      ok: f.latencies.length,
      maxMs: f.latencies.at(-1) ?? null,
      p50Ms: percentile(f.latencies, 0.5),
    };

    const table = Object.entries(kinds)
      .map(
        ([kind, k]) =>
          `${kind} ${k.asExpected}/${k.sent} ${k.expected}${k.wrong + k.missing + k.duplicates > 0 ? ` (wrong ${k.wrong}, missing ${k.missing}, duplicates ${k.duplicates})` : ""}`,
      )
      .join("; ");
    notes.push(
      `${placed.length} requests, ${(bytes / 1024 / 1024).toFixed(1)} MB: ${table}; ` +
        `${stats.drainMs !== null ? `all handled in ${(stats.drainMs / 1000).toFixed(1)} s` : "NOT all handled"}; dead letters with a wrong source ${stats.badSources}; ` +
        `consumer crashes ${stats.crashes}; fresh requests ${stats.fresh.ok}/${stats.fresh.requests} ok, p50 ${stats.fresh.p50Ms?.toFixed(0)} max ${stats.fresh.maxMs?.toFixed(0)} ms`,
    );
    for (const [kind, k] of Object.entries(kinds)) {
      if (k.missing > 0) failures.push(`${k.missing} ${kind} requests neither answered nor dead-lettered`);
      if (k.duplicates > 0) failures.push(`${k.duplicates} extra answers or dead letters to ${kind} requests`);
      if (k.wrong > 0) failures.push(`${k.wrong} ${kind} requests not handled as expected (${k.expected})`);
    }
    if (stats.badSources > 0)
      failures.push(`${stats.badSources} dead letters whose idd_dlqSource is not the request's topic/partition/offset`);
    if (strangers > 0) failures.push(`${strangers} replies or dead letters for requests this phase did not send`);
    if (traffic.uncorrelated > 0) failures.push(`${traffic.uncorrelated} replies or dead letters without kafka_correlationId`);
    if (stats.crashes > 0) failures.push(`${stats.crashes} "Kafka consumer crashed" lines in the worker logs`);
    if (f.failures.length > 0) failures.push(`fresh requests failed: ${f.failures.slice(0, 3).join("; ")}`);
    if (stats.fresh.maxMs !== null && stats.fresh.maxMs > s.freshMaxMs)
      failures.push(`a fresh request took ${stats.fresh.maxMs.toFixed(0)} ms after the hostile stream (limit ${s.freshMaxMs} ms)`);
  } finally {
    await traffic.close();
  }
  return { stats, notes, failures };
}

function safeReply(value: Buffer | null) {
  try {
    return replyFromJson(String(value));
  } catch {
    return undefined;
  }
}
