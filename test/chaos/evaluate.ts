/**
 * The checks at the end of a run: the whole history for G1 and G2 (test/support/history.ts), every
 * skipped number against MongoDB's audit log (G4, test/support/gaps.ts), every request ended with
 * numbers or a typed code (G5), and the run's own failures (phases, exits, zombies).
 */
import { performance } from "node:perf_hooks";
import type { Store } from "../../src/storage/store.js";
import { type CounterAudit, checkGaps, type ReserveSettings } from "../support/gaps.js";
import { checkHistory, type Issued } from "../support/history.js";
import type { MongoQueries } from "../support/mongo-queries.js";
import { compareAudits, type SequenceAudit } from "./audit-check.js";
import { compareGapless, type GaplessAudit, gaplessAuditFailures, type Settlement, showGaplessAudit } from "./gapless.js";
import type { PoolWorker } from "./pool.js";
import { type ProfileName, REDIS_LOSSES } from "./profiles.js";
import type { RequestLog } from "./records.js";
import type { ChaosResult, CounterReport, PhaseReport } from "./results.js";

/** Everything a run gathered, for the checks. */
export interface RunOutcome {
  profile: ProfileName;
  seed: number;
  stackDir: string;
  workerLogDir: string;
  requests: RequestLog;
  /** Phases in which a worker was SIGKILLed (its unlogged blocks may show as gaps, G4). */
  killPhases: Set<number>;
  /** The workers' reservation settings: how much headroom a Redis loss may skip (G4). */
  reserve: ReserveSettings;
  /** Sequences checked for uniqueness only (no G2), and those without blocks to check gaps against (no G4). */
  unordered: Set<string>;
  ungranted: Set<string>;
  /** MongoDB's audit per counter (`sequence|period`), read after the workers flushed and stopped. */
  audit: Map<string, CounterAudit> | undefined;
  auditError: string | undefined;
  /** `idd audit` over every granted sequence, from MongoDB alone. */
  audits: SequenceAudit[] | undefined;
  /** The gapless sequence's audit at the end, and what its clients settled (test/chaos/gapless.ts). */
  gapless: { audit: GaplessAudit; settlements: Settlement[] } | undefined;
  workers: readonly PoolWorker[];
  unexpectedExits: string[];
  /** Workers that did not exit within 20 s of the SIGTERM that ended the run, and were killed. */
  stuckAtStop: string[];
  zombies: string[];
  unhandled: string[];
  notRun: string[];
  loadMs: number;
  log: (line: string) => void;
}

export function evaluate(o: RunOutcome): ChaosResult {
  const {
    requests,
    killPhases,
    unordered,
    ungranted,
    audit,
    auditError,
    workers,
    unexpectedExits,
    stuckAtStop,
    zombies,
    unhandled,
    notRun,
    loadMs,
    log,
  } = o;
  const { records, phases, untypedSamples } = requests;
  log(`checking ${records.length} requests`);
  const tCheck = performance.now();
  const issued: Issued[] = [];
  for (const r of records) {
    if (r.ranges && r.code !== "WRONG_COUNT")
      issued.push({ sequence: r.sequence, period: r.period ?? null, ranges: r.ranges, sentAt: r.sentAt, receivedAt: r.receivedAt });
  }
  const report = checkHistory(issued, unordered);
  const checkMs = performance.now() - tCheck;

  // Gaps over the sorted union of everything issued per (sequence, period); each gap belongs to
  // the phase of the number that ends it.
  const byCounter = new Map<string, { first: bigint; last: bigint; phase: number; lastPhase?: number }[]>();
  for (const r of records) {
    if (!r.ranges) continue;
    const key = `${r.sequence}|${r.period ?? ""}`;
    let list = byCounter.get(key);
    if (!list) {
      list = [];
      byCounter.set(key, list);
    }
    for (const x of r.ranges)
      list.push({ first: x.first, last: x.last, phase: r.phase, ...(r.lastPhase !== undefined && { lastPhase: r.lastPhase }) });
  }
  const phaseGap = new Map<number, bigint>();
  const counters: CounterReport[] = [];
  const gapViolations: string[] = [];
  const suiteViolations = new Map<string, number>();
  const killExplained = new Map<string, bigint>();
  for (const [counter, list] of [...byCounter].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const isUngranted = ungranted.has(counter.slice(0, counter.indexOf("|")));
    list.sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
    let largest = 0n;
    let numbers = 0n;
    let prevLast: bigint | undefined;
    for (const x of list) {
      numbers += x.last - x.first + 1n;
      if (prevLast !== undefined && x.first > prevLast + 1n) {
        const gap = x.first - prevLast - 1n;
        if (gap > largest) largest = gap;
        // Obfuscated values and snowflake ids are not serials: their distances are no gaps.
        if (!isUngranted && gap > (phaseGap.get(x.phase) ?? 0n)) phaseGap.set(x.phase, gap);
      }
      if (prevLast === undefined || x.last > prevLast) prevLast = x.last;
    }
    const a = isUngranted ? undefined : audit?.get(counter);
    const g = a
      ? checkGaps(
          counter,
          list,
          a,
          {
            names: phases.map((p) => p.name),
            kills: killPhases,
            redisLosses: new Set(phases.flatMap((p, i) => (p.kind !== "warmup" && REDIS_LOSSES.has(p.kind) ? [i] : []))),
          },
          o.reserve,
        )
      : undefined;
    if (g) {
      gapViolations.push(...g.violations);
      suiteViolations.set(counter, g.violations.length);
      killExplained.set(counter, g.unlogged.killed + g.unlogged.replay); // in no grant, put down to a kill or a Redis loss
    }
    counters.push({ counter, numbers: Number(numbers), largestGap: largest, gaps: g, ungranted: isUngranted });
  }

  const unaccounted: string[] = [];
  let unaccountedCount = 0;
  const phaseReports: PhaseReport[] = phases.map((p) => ({
    name: p.name,
    kind: p.kind,
    requests: 0,
    ok: 0,
    numbers: 0,
    errors: {},
    largestGap: 0n,
    p50Ms: null,
    p99Ms: null,
    maxWaitMs: null,
    recovered: p.recovered,
    failures: p.failures,
    ...(p.overload && { overload: p.overload }),
    ...(p.hostile && { hostile: p.hostile }),
    injectToOkMs: p.recoveredAt !== undefined ? p.recoveredAt - p.injectAt : null,
    healToOkMs: p.recoveredAt !== undefined ? p.recoveredAt - (p.healedAt ?? p.injectAt) : null,
    firstOkMs: null,
    stallMs: null,
    notes: p.notes,
  }));
  let ok = 0;
  let typedErrors = 0;
  const latencies = phaseReports.map((): number[] => []);
  for (const r of records) {
    const pr = phaseReports[r.phase] as PhaseReport;
    pr.requests++;
    pr.maxWaitMs = Math.max(pr.maxWaitMs ?? 0, r.receivedAt - r.sentAt);
    if (r.code === undefined) {
      ok++;
      pr.ok++;
      pr.numbers += r.count;
      latencies[r.phase]?.push(r.receivedAt - r.sentAt);
      continue;
    }
    pr.errors[r.code] = (pr.errors[r.code] ?? 0) + 1;
    if (r.code === "HUNG" || r.code === "WRONG_COUNT" || r.code === "NO_REPLY" || r.code.startsWith("UNTYPED:")) {
      unaccountedCount++;
      if (unaccounted.length < 20)
        unaccounted.push(
          `${r.code} ${r.sequence} count ${r.count} in ${pr.name}${r.code.startsWith("UNTYPED:") ? `: ${untypedSamples.get(r.code.slice(8)) ?? ""}` : ""}`,
        );
    } else typedErrors++;
  }
  for (const [i, g] of phaseGap) (phaseReports[i] as PhaseReport).largestGap = g;
  recoveryTimes(records, phases, phaseReports);
  for (const [i, l] of latencies.entries()) {
    if (l.length === 0) continue;
    l.sort((a, b) => a - b);
    const pr = phaseReports[i] as PhaseReport;
    pr.p50Ms = l[Math.floor(l.length * 0.5)] ?? null;
    pr.p99Ms = l[Math.min(l.length - 1, Math.floor(l.length * 0.99))] ?? null;
  }

  // idd's own error/fatal lines and consumer crashes (kafkajs logs every rebalance at error level).
  const workerErrors: string[] = [];
  for (const w of workers) {
    const bad = w.wp.log.filter((l) => /"level":(50|60)/.test(l) && (!l.includes('"component":"kafkajs"') || l.includes('"msg":"Crash')));
    if (bad.length > 0) workerErrors.push(`${w.id}: ${bad.length} error lines, first: ${(bad[0] as string).slice(0, 300)}`);
  }

  const unrecovered = phaseReports.filter((p) => !p.recovered).map((p) => p.name);
  const phaseFailures = phaseReports.flatMap((p) => p.failures.map((f) => `${p.name}: ${f}`));
  const failures: string[] = [];
  if (phaseFailures.length > 0) failures.push(`${phaseFailures.length} failed phase checks (${phaseFailures.slice(0, 3).join("; ")})`);
  if (report.duplicates.length > 0) failures.push(`${report.duplicates.length} duplicates (G1)`);
  if (report.orderViolations.length > 0) failures.push(`${report.orderViolations.length} order violations (G2)`);
  if (unaccountedCount > 0) failures.push(`${unaccountedCount} requests without numbers and without a typed code (G5)`);
  if (unhandled.length > 0) failures.push(`${unhandled.length} unhandled promise rejections`);
  if (unrecovered.length > 0) failures.push(`not recovered: ${unrecovered.join(", ")}`);
  if (notRun.length > 0) failures.push(`${notRun.length} phases not run`);
  if (unexpectedExits.length > 0) failures.push(`${unexpectedExits.length} unexpected worker exits`);
  if (stuckAtStop.length > 0) failures.push(`${stuckAtStop.join(", ")} did not stop within 20 s of SIGTERM and were killed`);
  if (zombies.length > 0) failures.push(`${zombies.length} workers alive but out of the consumer group`);
  if (records.length === 0) failures.push("no requests were made");
  if (gapViolations.length > 0) failures.push(`${gapViolations.length} gaps not explained by the audit log (G4)`);
  const auditDisagreements = o.audits ? compareAudits(o.audits, byCounter, suiteViolations, killExplained, killPhases.size > 0) : [];
  if (auditDisagreements.length > 0) failures.push(`${auditDisagreements.length} disagreements between idd audit and the run (#21)`);
  if (records.length > 0 && !o.audits) failures.push("idd audit did not run over the sequences");
  const gapless = o.gapless && gaplessSummary(o.gapless.audit, o.gapless.settlements);
  if (gapless) {
    failures.push(...gaplessAuditFailures(o.gapless?.audit as GaplessAudit), ...gapless.disagreements.map((d) => `gapless: ${d}`));
    const unaccountedSettles = Object.keys(gapless.codes).filter((c) => c === "HUNG" || c.startsWith("UNTYPED:"));
    if (unaccountedSettles.length > 0) failures.push(`gapless settlements without a typed code: ${unaccountedSettles.join(", ")}`);
  } else if (records.length > 0) failures.push("idd audit did not run over the gapless sequence");
  if (records.length > 0 && !audit)
    failures.push(`MongoDB's audit could not be read, so gaps were not checked: ${auditError ?? "no services"}`);

  return {
    profile: o.profile,
    seed: o.seed,
    stackDir: o.stackDir,
    workerLogDir: o.workerLogDir,
    phases: phaseReports,
    notRun,
    unrecovered,
    phaseFailures,
    requests: records.length,
    ok,
    typedErrors,
    numbers: report.numbers,
    loadMs,
    requestsPerSecond: loadMs > 0 ? (records.length * 1000) / loadMs : 0,
    duplicates: report.duplicates,
    orderViolations: report.orderViolations,
    gapViolations,
    audits: (o.audits ?? []).map(({ ranges: _ranges, ...a }) => a),
    auditDisagreements,
    ...(gapless && { gapless }),
    unaccounted,
    unaccountedCount,
    unhandledRejections: unhandled,
    unexpectedExits,
    zombies,
    workerErrors,
    counters,
    checkMs,
    failures,
    passed: failures.length === 0,
  };
}

/**
 * Per phase, measured from the replies themselves (performance.now() times; phases keep Date.now()):
 * the first reply with numbers per sequence after the injection, and the longest interval between
 * two replies with numbers of one sequence that overlaps the phase.
 */
function recoveryTimes(records: RequestLog["records"], phases: RequestLog["phases"], reports: PhaseReport[]): void {
  const okAt = new Map<string, { sentAt: number; receivedAt: number }[]>();
  let lastAt = 0;
  for (const r of records) {
    lastAt = Math.max(lastAt, r.receivedAt);
    if (r.code !== undefined) continue;
    const list = okAt.get(r.sequence) ?? [];
    list.push(r);
    okAt.set(r.sequence, list);
  }
  for (const list of okAt.values()) list.sort((a, b) => a.receivedAt - b.receivedAt);
  const perf = (dateMs: number) => dateMs - performance.timeOrigin;
  for (const [i, p] of phases.entries()) {
    const report = reports[i] as PhaseReport;
    if (p.kind === "warmup") continue;
    const from = perf(p.injectAt);
    const next = phases[i + 1];
    const to = next ? perf(next.injectAt) : lastAt;
    let first: number | null = 0;
    let stall = 0;
    for (const list of okAt.values()) {
      const after = list.find((r) => r.sentAt >= from);
      if (after === undefined) first = null;
      else if (first !== null) first = Math.max(first, after.receivedAt - from);
      for (let k = 1; k < list.length; k++) {
        const a = (list[k - 1] as { receivedAt: number }).receivedAt;
        const b = (list[k] as { receivedAt: number }).receivedAt;
        if (b >= from && a <= to) stall = Math.max(stall, b - a);
      }
    }
    report.firstOkMs = first;
    report.stallMs = okAt.size > 0 ? stall : null;
  }
}

/** Grants and reservation maxima of every counter the run issued numbers for. */
export async function readAudit(
  store: Pick<Store, "reservationRecords">,
  queries: MongoQueries,
  records: { sequence: string; period?: string | null; ranges?: unknown }[],
) {
  const counters = new Map<string, { sequence: string; period: string | null }>();
  for (const r of records) {
    if (r.ranges) counters.set(`${r.sequence}|${r.period ?? ""}`, { sequence: r.sequence, period: r.period ?? null });
  }
  const audit = new Map<string, CounterAudit>();
  for (const [key, c] of counters) {
    const grants = (await queries.grantsOf(c.sequence, c.period)).map((g) => ({ first: g.first, last: g.last }));
    audit.set(key, { grants, reservationMaxima: [] });
  }
  for await (const r of store.reservationRecords([...new Set([...counters.values()].map((c) => c.sequence))])) {
    // Only what workers reserved: replay records the reservation it restored to, never a new one,
    // so a replay that invented a higher max would show as an unexplained gap.
    if (!/^replay(@|$)/.test(r.worker)) audit.get(`${r.sequence}|${r.period ?? ""}`)?.reservationMaxima.push(r.max);
  }
  return audit;
}

function gaplessSummary(a: GaplessAudit, settlements: readonly Settlement[]): NonNullable<ChaosResult["gapless"]> {
  const codes: Record<string, number> = {};
  for (const s of settlements) if (s.code !== undefined) codes[s.code] = (codes[s.code] ?? 0) + 1;
  const sequence = settlements[0]?.sequence ?? "the gapless sequence";
  return {
    audit: showGaplessAudit(sequence, a),
    settlements: settlements.length,
    settled: settlements.filter((s) => s.code === undefined).length,
    codes,
    disagreements: compareGapless(a, settlements),
  };
}
