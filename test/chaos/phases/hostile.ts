/**
 * `hostile`: hostile requests (test/support/hostile-requests.ts) interleaved with good ones, from a
 * plain kafkajs producer, in batches compressed with every codec Kafka defines in turn: every good
 * one answered exactly once with numbers, every hostile one dead-lettered with its code or answered
 * with its error code, exactly once; and one batch no one can decode within idd's bound (a gzip
 * bomb) dead-lettered whole as BATCH_UNREADABLE; no consumer crash; fresh requests answered fast
 * afterwards.
 */
import { CompressionTypes } from "kafkajs";
import { CODEC_IDS, compressionProblem } from "../../../src/transport/kafka/codecs.js";
import {
  type BuiltRequest,
  goodRequest,
  HOSTILE_KINDS,
  type HostileKind,
  hostileRequest,
  LARGE_RECORD_BYTES,
} from "../../support/hostile-requests.js";
import { poll, sleep } from "../../support/wait.js";
import {
  headerText,
  type Placed,
  percentile,
  pick,
  pump,
  type RawPhaseContext,
  type RawPhaseResult,
  type RawPhaseState,
  RawTraffic,
  recordReplies,
  runRawPhase,
  SETTLE_MS,
  safeReply,
  shuffle,
  sumRanges,
} from "./raw-traffic.js";

/** Every codec this Node can write, by kafkajs's ids (zstd only where Node's zlib has it). */
const WRITABLE_CODECS = (["none", "gzip", "snappy", "lz4", "zstd"] as const).filter((c) => !compressionProblem(c)).map((c) => CODEC_IDS[c]);

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
    let unit = 0;
    const codec = () => WRITABLE_CODECS[unit++ % WRITABLE_CODECS.length] as number;
    try {
      const sends = pump(units, s.inFlight, (u) => traffic.send(ctx.requestTopic, ctx.requestPartitions, u, codec()));
      // Amid them, a batch no one can decode: 80 MiB of one byte, 80 KB once gzipped (the broker takes it).
      const bomb = goodRequest(pick(ctx.sequences, ctx.random), target, 1, -1);
      bomb.message.value = Buffer.alloc(80 * 1024 * 1024, 0x20);
      await traffic.send(ctx.requestTopic, ctx.requestPartitions, [bomb], CompressionTypes.GZIP);
      placed = (await sends).flat();
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
    // The bomb's dead letter stands for its batch: it carries no request's headers.
    const unreadable = traffic.uncorrelatedCodes.filter((c) => c === "BATCH_UNREADABLE").length;
    if (unreadable !== 1) failures.push(`${unreadable} BATCH_UNREADABLE dead letters for the one undecodable batch`);
    if (traffic.uncorrelated > unreadable)
      failures.push(`${traffic.uncorrelated - unreadable} replies or dead letters without kafka_correlationId`);
    if (stats.crashes > 0) failures.push(`${stats.crashes} "Kafka consumer crashed" lines in the worker logs`);
    if (f.failures.length > 0) failures.push(`fresh requests failed: ${f.failures.slice(0, 3).join("; ")}`);
    if (stats.fresh.maxMs !== null && stats.fresh.maxMs > s.freshMaxMs)
      failures.push(`a fresh request took ${stats.fresh.maxMs.toFixed(0)} ms after the hostile stream (limit ${s.freshMaxMs} ms)`);
  } finally {
    await traffic.close();
  }
  return { stats, notes, failures };
}

export interface HostileContext {
  raw: RawPhaseContext;
  settings: HostileSettings;
  /** How many workers have exited on their own so far: one that does during the phase fails it. */
  exits: () => number;
}

/** The phase as the harness runs it: its stats on the phase, its failed checks in the phase's failures. */
export async function hostile(p: RawPhaseState & { hostile?: HostileStats }, { raw, settings, exits }: HostileContext): Promise<void> {
  const s = await runRawPhase(p, () => runHostile(raw, settings), { exits, log: raw.log });
  if (s) p.hostile = s;
}
