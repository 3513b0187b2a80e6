/**
 * `idd audit` against the chaos run's own history (issue #21): after the run, the audit walks every
 * granted sequence from MongoDB alone, and its verdicts are compared with what the clients received
 * and with the suite's own gap check (test/support/gaps.ts):
 * - no number a client received lies in a gap the audit reports;
 * - a strict counter has unexplained numbers exactly when the suite's check finds a violation: a
 *   worker killed between its claim in Redis and the write-ahead grant leaves a block the counter's
 *   next claim records as abandoned;
 * - for a relaxed counter the audit reports unexplained numbers only where the suite's check
 *   explained them by a SIGKILL or a Redis loss: a worker killed before its batch of grants was
 *   appended leaves blocks no record shows;
 * - an audited sequence is walked number by number and counts at least as many answered numbers as
 *   the clients received, and every number it gave up has a worker's release saying why unless a
 *   worker was killed (a dead worker releases nothing).
 */
import { type AuditStore, audit, type CounterGap } from "../../src/audit/audit.js";
import { NO_RELEASE } from "../../src/audit/walk.js";

export interface IssuedRange {
  first: bigint;
  last: bigint;
}

export interface SequenceAudit {
  sequence: string;
  mode: string;
  strict: boolean;
  answered: bigint;
  /** Numbers per reason. */
  gaps: Record<string, bigint>;
  /** Given-up numbers per why (the workers' releases; none: a worker died holding them). */
  givenUpWhy: Record<string, bigint>;
  /** The gap ranges, per counter key `sequence|period`. */
  ranges: Map<string, CounterGap[]>;
}

/** Audits each sequence as `idd audit` does (the same function, in process). */
export async function auditSequences(store: AuditStore, names: readonly string[]): Promise<SequenceAudit[]> {
  const out: SequenceAudit[] = [];
  for (const sequence of names) {
    const def = await store.getSequence(sequence);
    if (!def) continue;
    const ranges = new Map<string, CounterGap[]>();
    const r = await audit(store, {
      sequence,
      settleMs: 0,
      onGap: (g) => {
        const key = `${sequence}|${g.period ?? ""}`;
        ranges.set(key, [...(ranges.get(key) ?? []), g]);
      },
    });
    out.push({
      sequence,
      mode: r.mode,
      strict: def.grantLog === "strict",
      answered: r.total.answered,
      gaps: Object.fromEntries(Object.entries(r.total.gaps).map(([k, v]) => [k, v.numbers])),
      givenUpWhy: r.givenUpWhy,
      ranges,
    });
  }
  return out;
}

/**
 * Disagreements between the audit and the run (empty: they agree). `issued`: what the clients
 * received per counter key; `suiteViolations`: the suite's unexplained gaps per counter key;
 * `killExplained`: numbers the suite explained by a SIGKILL per counter key.
 */
export function compareAudits(
  audits: readonly SequenceAudit[],
  issued: ReadonlyMap<string, readonly IssuedRange[]>,
  suiteViolations: ReadonlyMap<string, number>,
  killExplained: ReadonlyMap<string, bigint>,
  workersKilled: boolean,
): string[] {
  const out: string[] = [];
  for (const a of audits) {
    // A given-up number with no release was held by a worker that died: none can be without a SIGKILL.
    const unreleased = Object.entries(a.givenUpWhy).find(([why]) => why === NO_RELEASE)?.[1] ?? 0n;
    if (unreleased > 0n && !workersKilled) {
      // The ranges, their grants' workers and times: the evidence to find which path gave them up silently.
      const which = [...a.ranges.values()]
        .flat()
        .filter((g) => g.evidence?.includes(NO_RELEASE))
        .map((g) => `${g.first}..${g.last} (${g.worker ?? "?"} at ${g.at?.toISOString() ?? "?"}, ${g.evidence})`);
      out.push(`${a.sequence}: ${unreleased} given-up numbers with no release, though no worker was killed: ${which.join("; ")}`);
    }
    const keys = [...issued.keys()].filter((k) => k.startsWith(`${a.sequence}|`));
    let received = 0n;
    for (const key of keys) {
      const got = [...(issued.get(key) ?? [])].sort((x, y) => (x.first < y.first ? -1 : 1));
      for (const x of got) received += x.last - x.first + 1n;
      const gaps = a.ranges.get(key) ?? [];
      const receivedIn = (g: IssuedRange) =>
        got.reduce((n, x) => {
          const lo = x.first > g.first ? x.first : g.first;
          const hi = x.last < g.last ? x.last : g.last;
          return hi >= lo ? n + (hi - lo + 1n) : n;
        }, 0n);
      const violations = suiteViolations.get(key) ?? 0;
      if (a.strict) {
        // Every block is logged before use: a received number inside a gap would be the audit telling
        // an auditor that a number handed out was never answered.
        for (const g of gaps)
          if (receivedIn(g) > 0n)
            out.push(`${key}: the audit reports ${g.first}..${g.last} as ${g.reason}, but clients received numbers in it`);
        const unexplainedRanges = gaps.filter((g) => g.reason === "unexplained").length;
        if (unexplainedRanges > 0 !== violations > 0)
          out.push(
            `${key}: strict grant log, the audit finds ${unexplainedRanges} unexplained ranges and the suite ${violations} violations`,
          );
      }
      // A worker killed between its claim in Redis and the grant's write (strict: the write-ahead;
      // relaxed: the batch) leaves a block in no grant, which the audit, reading nothing but the log,
      // cannot explain (with the relaxed log, numbers answered from it lie there too). What no client
      // received of it must be what the suite put down to killed workers (or a Redis loss).
      const unexplained = gaps.filter((g) => g.reason === "unexplained").reduce((n, g) => n + (g.last - g.first + 1n) - receivedIn(g), 0n);
      if (unexplained > (killExplained.get(key) ?? 0n))
        out.push(
          `${key}: ${a.strict ? "strict" : "relaxed"} grant log, ${unexplained} unexplained numbers no client received, more than the ${killExplained.get(key) ?? 0n} the suite put down to killed workers or a Redis loss`,
        );
    }
    if (a.mode === "numbers" && a.answered < received)
      out.push(`${a.sequence}: audited number by number, ${a.answered} answered in the log but clients received ${received}`);
  }
  return out;
}
