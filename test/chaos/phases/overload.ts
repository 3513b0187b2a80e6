/**
 * `overload`: an open-loop burst of single-number JSON requests from a plain kafkajs producer,
 * published as fast as the producer goes and answered on a reply topic of its own. Every request
 * must be answered exactly once, and its numbers join the run's history (G1, G2, G4 over all clients).
 */
import { type BuiltRequest, goodRequest } from "../../support/hostile-requests.js";
import { poll, sleep } from "../../support/wait.js";
import {
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
} from "./raw-traffic.js";

export interface OverloadSettings {
  /** Single-number requests in the burst. */
  requests: number;
  /** Records per produce request, and produce requests in flight at once. */
  chunk: number;
  inFlight: number;
  /** How long the pool may take to answer the whole burst once it is published. */
  drainTimeoutMs: number;
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

export interface OverloadContext {
  raw: RawPhaseContext;
  settings: OverloadSettings;
  /** How many workers have exited on their own so far: one that does during the phase fails it. */
  exits: () => number;
}

/** The phase as the harness runs it: its stats on the phase, its failed checks in the phase's failures. */
export async function overload(p: RawPhaseState & { overload?: OverloadStats }, { raw, settings, exits }: OverloadContext): Promise<void> {
  const s = await runRawPhase(p, () => runOverload(raw, settings), { exits, log: raw.log });
  if (s) p.overload = s;
}
