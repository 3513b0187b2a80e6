/**
 * `idd audit` without the terminal: walks every counter of a sequence that the selection names (a
 * period prefix, a numeric range, or the numbers issued between two dates) over MongoDB's grants,
 * answered runs (the `issuance` of audited sequences) and reservations, streamed; each gap goes to
 * `onGap` as it is found, and the result counts them per reason.
 */
import { IddError } from "../core/errors.js";
import type { SequenceDef } from "../sequences/definition.js";
import type { LoggedReservation } from "../storage/reservations.js";
import type { Store } from "../storage/store.js";
import type { Span, Window } from "../storage/windows.js";
import { walkGapless } from "./gapless-walk.js";
import { noGaps, REASONS, type Reason } from "./reasons.js";
import { type Gap, NO_RELEASE, type Tally, walk } from "./walk.js";

export type AuditStore = Pick<
  Store,
  | "getSequence"
  | "reservationRecords"
  | "grantsInOrder"
  | "issuanceInOrder"
  | "releasesInOrder"
  | "grantSpan"
  | "issuanceSpan"
  | "gaplessPeriods"
  | "gaplessInOrder"
>;

export interface AuditSelection {
  /** Counters whose period starts with this (`202611`: every day of November 2026). */
  period?: string;
  /** Only these numbers. */
  range?: Span;
  /** Only the numbers answered (for audited sequences; else granted) from `from` until before `to`. */
  dates?: { from: Date; to: Date };
}

export interface AuditOptions extends AuditSelection {
  sequence: string;
  /** How long a worker may answer from a cached definition: blocks claimed within this after auditing began are audited as blocks. */
  settleMs: number;
  onGap: (g: CounterGap) => void | Promise<void>;
  progress?: (line: string) => void;
  progressMs?: number;
}

export interface CounterGap extends Gap {
  period: string | null;
}

export type Mode = "numbers" | "blocks" | "mixed";

export interface CounterResult {
  period: string | null;
  mode: Mode;
  tally: Tally;
}

export interface AuditResult {
  sequence: string;
  /** Grants claimed from then on were audited number by number; null: every block only as a block. */
  numbersFrom: Date | null;
  counters: CounterResult[];
  total: Tally;
  mode: Mode;
  /** The first 1,000 unexplained ranges (the total is in `total`). */
  unexplained: CounterGap[];
  /** Given-up numbers per why (a worker's release, or none: src/audit/walk.ts). */
  givenUpWhy: Record<string, bigint>;
  explained: boolean;
}

const emptyTally = (): Tally => ({
  answered: 0n,
  unproven: 0n,
  gaps: noGaps(),
});

function add(total: Tally, t: Tally): void {
  total.answered += t.answered;
  total.unproven += t.unproven;
  for (const r of Object.keys(t.gaps) as Reason[]) {
    total.gaps[r].ranges += t.gaps[r].ranges;
    total.gaps[r].numbers += t.gaps[r].numbers;
  }
  if (t.first !== undefined && (total.first === undefined || t.first < total.first)) total.first = t.first;
  if (t.last !== undefined && (total.last === undefined || t.last > total.last)) total.last = t.last;
}

const modeOf = (numbersFrom: Date | null, t: Tally): Mode =>
  numbersFrom === null || (t.unproven > 0n && t.answered === 0n) ? "blocks" : t.unproven > 0n ? "mixed" : "numbers";

/** The sequence's counters the selection names, each with its reservation records. */
async function countersOf(store: AuditStore, def: SequenceDef, period: string | undefined) {
  if (period !== undefined && def.period === "never")
    throw new IddError("AUDIT_INVALID", `sequence "${def.name}" never restarts: it has no periods to select`);
  const counters = new Map<string, { period: string | null; reservations: LoggedReservation[] }>();
  for await (const r of store.reservationRecords([def.name])) {
    if (period !== undefined && !(r.period ?? "").startsWith(period)) continue;
    const key = r.period ?? "";
    let c = counters.get(key);
    if (!c) {
      c = { period: r.period, reservations: [] };
      counters.set(key, c);
    }
    c.reservations.push(r);
  }
  return [...counters.values()].sort((a, b) => ((a.period ?? "") < (b.period ?? "") ? -1 : 1));
}

export async function audit(store: AuditStore, o: AuditOptions): Promise<AuditResult> {
  const def = await store.getSequence(o.sequence);
  if (!def) throw new IddError("UNKNOWN_SEQUENCE", `no sequence named "${o.sequence}"`);
  if (def.kind === "snowflake") throw new IddError("AUDIT_INVALID", `"${def.name}" is a snowflake sequence: its ids are no series`);
  // Switched on by an update: workers may answer from a cached definition for a while yet.
  const since = def.audit ? def.auditSince : null;
  const numbersFrom = since && (since.getTime() > def.createdAt.getTime() ? new Date(since.getTime() + o.settleMs) : since);
  const result: AuditResult = {
    sequence: def.name,
    numbersFrom,
    counters: [],
    total: emptyTally(),
    mode: "numbers",
    unexplained: [],
    givenUpWhy: {},
    explained: true,
  };
  const progressMs = o.progressMs ?? 2000;
  let saidAt = Date.now();
  if (def.gapless) return auditGapless(store, def, o, result);
  for (const c of await countersOf(store, def, o.period)) {
    const window = await windowOf(store, def, c.period, o);
    if (window === undefined) continue;
    const reserved = c.reservations.reduce((m, r) => (r.max > m ? r.max : m), 0n);
    const label = c.period === null ? def.name : `${def.name} ${c.period}`;
    // Read from the counter's first record: where the series starts, and a replay's previous block.
    const upTo = window.to === undefined ? {} : { to: window.to };
    const tally = await walk(
      {
        start: def.start,
        grants: store.grantsInOrder(def.name, c.period, upTo),
        answered: store.issuanceInOrder(def.name, c.period, upTo),
        releases: store.releasesInOrder(def.name, c.period, upTo),
        reservations: c.reservations,
        numbersFrom,
        window,
        ...(window.to !== undefined && { issuedAbove: () => issuedAbove(store, def.name, c.period, window.to as bigint, numbersFrom) }),
      },
      async (g) => {
        const gap = { ...g, period: c.period };
        if (!REASONS[g.reason].explained && result.unexplained.length < 1000) result.unexplained.push(gap);
        if (g.reason === "given-up") {
          const why = g.evidence?.slice(g.evidence.indexOf(": ") + 2) ?? NO_RELEASE;
          result.givenUpWhy[why] = (result.givenUpWhy[why] ?? 0n) + (g.last - g.first + 1n);
        }
        await o.onGap(gap);
      },
      (at) => {
        if (!o.progress || progressMs <= 0 || Date.now() - saidAt < progressMs) return;
        saidAt = Date.now();
        o.progress(`${label}: at ${at} of ${reserved} reserved`);
      },
    );
    add(result.total, tally);
    result.counters.push({ period: c.period, mode: modeOf(numbersFrom, tally), tally });
    o.progress?.(`${label}: done, ${tally.first ?? "-"}..${tally.last ?? "-"}, ${gapCount(tally)} gap ranges`);
  }
  const modes = new Set(result.counters.map((c) => c.mode));
  result.mode = modes.size === 1 ? ([...modes][0] as Mode) : modes.size === 0 ? modeOf(numbersFrom, result.total) : "mixed";
  result.explained = result.total.gaps.unexplained.ranges === 0;
  return result;
}

/**
 * A gapless sequence, number by number from its own documents (src/audit/gapless-walk.ts): every
 * number is confirmed, voided with a reason or pending, or its document is missing (unexplained).
 */
async function auditGapless(store: AuditStore, def: SequenceDef, o: AuditOptions, result: AuditResult): Promise<AuditResult> {
  if (o.dates) throw new IddError("AUDIT_INVALID", `"${def.name}" is gapless: select its numbers with --range or --period, not dates`);
  if (o.period !== undefined && def.period === "never")
    throw new IddError("AUDIT_INVALID", `sequence "${def.name}" never restarts: it has no periods to select`);
  const periods = (await store.gaplessPeriods(def.name)).filter((p) => o.period === undefined || (p ?? "").startsWith(o.period));
  for (const period of periods.sort((a, b) => ((a ?? "") < (b ?? "") ? -1 : 1))) {
    const label = period === null ? def.name : `${def.name} ${period}`;
    const window = o.range ? { from: o.range.first, to: o.range.last } : undefined;
    const tally = await walkGapless(store.gaplessInOrder(def.name, period), def.start, window, async (g) => {
      const gap = { ...g, period };
      if (!REASONS[g.reason].explained && result.unexplained.length < 1000) result.unexplained.push(gap);
      await o.onGap(gap);
    });
    add(result.total, tally);
    result.counters.push({ period, mode: "numbers", tally });
    o.progress?.(`${label}: done, ${tally.first ?? "-"}..${tally.last ?? "-"}, ${gapCount(tally)} gap ranges`);
  }
  result.mode = "numbers";
  result.explained = result.total.gaps.unexplained.ranges === 0;
  return result;
}

/** Whether a number above `to` was answered (or, for blocks audited only as blocks, granted). */
async function issuedAbove(store: AuditStore, sequence: string, period: string | null, to: bigint, numbersFrom: Date | null) {
  const above = { from: to + 1n };
  for await (const r of store.issuanceInOrder(sequence, period, above)) if (r.last > to) return true;
  for await (const g of store.grantsInOrder(sequence, period, above))
    if (g.last > to && !g.abandoned && (numbersFrom === null || g.at < numbersFrom)) return true;
  return false;
}

const gapCount = (t: Tally) => Object.values(t.gaps).reduce((n, g) => n + g.ranges, 0);

/** The numbers of one counter the selection names; undefined when it names none. */
async function windowOf(store: AuditStore, def: SequenceDef, period: string | null, o: AuditSelection): Promise<Window | undefined> {
  let window: Window = o.range ? { from: o.range.first, to: o.range.last } : {};
  if (o.dates) {
    const { from, to } = o.dates;
    const span = def.audit ? await store.issuanceSpan(def.name, period, from, to) : await store.grantSpan(def.name, period, from, to);
    if (!span) return undefined;
    window = {
      from: window.from !== undefined && window.from > span.first ? window.from : span.first,
      to: window.to !== undefined && window.to < span.last ? window.to : span.last,
    };
  }
  return window.from !== undefined && window.to !== undefined && window.from > window.to ? undefined : window;
}
