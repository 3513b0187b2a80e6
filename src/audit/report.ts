/**
 * What `idd audit` prints: the human summary (counts per reason, what the walk proves and what it
 * cannot, the unexplained ranges), a gap as a CSV row and as JSON. Counters stay below 2^53, so
 * numbers print as JSON numbers, exactly.
 */
import type { AuditResult, CounterGap, Mode } from "./audit.js";
import { REASON_NAMES, REASONS } from "./reasons.js";
import type { Tally } from "./walk.js";

export const CSV_HEADER = "period,first,last,count,reason,worker,time,evidence";

const csvField = (v: string) => (/[",\n\r]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v);

export function csvRow(g: CounterGap): string {
  return [
    g.period ?? "",
    String(g.first),
    String(g.last),
    String(g.last - g.first + 1n),
    g.reason,
    g.worker ?? "",
    g.at?.toISOString() ?? "",
    g.evidence ?? "",
  ]
    .map(csvField)
    .join(",");
}

export function gapJson(g: CounterGap): Record<string, unknown> {
  return {
    period: g.period,
    first: Number(g.first),
    last: Number(g.last),
    count: Number(g.last - g.first + 1n),
    reason: g.reason,
    worker: g.worker,
    at: g.at?.toISOString() ?? null,
    evidence: g.evidence,
  };
}

/** What a walk in each mode proves, and what it cannot. */
export const PROOF: Record<Mode, { proves: string; cannot: string }> = {
  numbers: {
    proves:
      "every number from the first to the last issued one was answered (recorded before its reply went out) or is a gap with its reason and the record that shows it",
    cannot: "what a worker that died was doing with the numbers it held (its log says), nor that a reply reached its client",
  },
  blocks: {
    proves:
      "every number from the first to the last granted one lies in a block granted to a worker, in an abandoned claim, or in a replay's headroom, or is unexplained",
    cannot:
      "which numbers of a block were answered: the sequence records no answers (idd seq update NAME --audit), so a block's given-up tail looks like issued numbers, and the series may end before its last granted number",
  },
  mixed: {
    proves: "number by number for blocks claimed since auditing began, block by block before",
    cannot: "which numbers of the blocks claimed before auditing began were answered",
  },
};

function tallyJson(t: Tally) {
  return {
    first: t.first === undefined ? null : Number(t.first),
    last: t.last === undefined ? null : Number(t.last),
    answered: Number(t.answered),
    unproven: Number(t.unproven),
    gaps: Object.fromEntries(REASON_NAMES.map((r) => [r, { ranges: t.gaps[r].ranges, numbers: Number(t.gaps[r].numbers) }])),
  };
}

export function summaryJson(r: AuditResult): Record<string, unknown> {
  return {
    sequence: r.sequence,
    mode: r.mode,
    numbersFrom: r.numbersFrom?.toISOString() ?? null,
    explained: r.explained,
    ...PROOF[r.mode],
    total: tallyJson(r.total),
    counters: r.counters.map((c) => ({ period: c.period, mode: c.mode, ...tallyJson(c.tally) })),
    unexplained: r.unexplained.map(gapJson),
    givenUpWhy: Object.fromEntries(Object.entries(r.givenUpWhy).map(([why, n]) => [why, Number(n)])),
  };
}

const range = (first: bigint, last: bigint) => (first === last ? `${first}` : `${first}..${last}`);

export function summaryLines(r: AuditResult): string[] {
  const t = r.total;
  const periods = r.counters.filter((c) => c.period !== null).map((c) => c.period as string);
  const lines = [
    `sequence ${r.sequence}${periods.length > 0 ? `, ${periods.length} periods ${periods[0]}..${periods.at(-1)}` : ""}: ${t.first === undefined ? "nothing issued" : `numbers ${range(t.first, t.last as bigint)}`}`,
    `mode: ${r.mode === "numbers" ? "number by number" : r.mode === "blocks" ? "block by block" : "mixed"}${r.numbersFrom ? ` (answers recorded for blocks claimed from ${r.numbersFrom.toISOString()})` : ""}`,
    `  answered         ${t.answered}`,
  ];
  for (const reason of REASON_NAMES) {
    const g = t.gaps[reason];
    lines.push(`  ${reason.padEnd(16)} ${g.numbers}${g.ranges > 0 ? ` in ${g.ranges} range${g.ranges === 1 ? "" : "s"}` : ""}`);
    if (reason === "given-up")
      for (const [why, n] of Object.entries(r.givenUpWhy).sort(([, a], [, b]) => (a > b ? -1 : 1))) lines.push(`    ${n} ${why}`);
  }
  if (r.mode !== "numbers") lines.push(`  unproven         ${t.unproven} (granted; answered or given up, the log cannot tell)`);
  lines.push(`proves: ${PROOF[r.mode].proves}`, `cannot prove: ${PROOF[r.mode].cannot}`);
  for (const reason of REASON_NAMES) if (t.gaps[reason].ranges > 0) lines.push(`${reason}: ${REASONS[reason].doc}`);
  if (r.unexplained.length > 0) {
    lines.push(`unexplained numbers (${t.gaps.unexplained.numbers} in ${t.gaps.unexplained.ranges} ranges):`);
    for (const g of r.unexplained) lines.push(`  ${g.period === null ? "" : `${g.period} `}${range(g.first, g.last)}`);
    if (t.gaps.unexplained.ranges > r.unexplained.length)
      lines.push(`  … ${t.gaps.unexplained.ranges - r.unexplained.length} more ranges (--csv lists all)`);
  }
  return lines;
}
