/**
 * The walk of one counter's series (`idd audit`): a merge of its grants and its answered runs, both
 * streamed lowest first, that labels every stretch of numbers from the first issued to the last
 * issued one: answered; `unproven` (in a block claimed before the sequence was audited, so the log
 * cannot tell issued numbers from given-up ones); or a gap with its reason (reasons.ts). An abandoned
 * claim record (a write-ahead claim whose grant was never written) is a gap in either mode: its block
 * was never used. Memory holds a few records at a time, whatever the length of the series.
 */
import type { LoggedGrant } from "../storage/grants.js";
import type { Release } from "../storage/releases.js";
import type { LoggedReservation } from "../storage/reservations.js";
import type { Span, Window } from "../storage/windows.js";
import { noGaps, type Reason } from "./reasons.js";

/** Numbers not answered, with their reason and the record that shows it (none for `unexplained`). */
export interface Gap extends Span {
  reason: Reason;
  worker: string | null;
  at: Date | null;
  evidence: string | null;
}

export interface WalkInput {
  /**
   * The counter's first number (the definition's start). Given, the series is walked from it, so
   * numbers below the lowest record (a killed worker's unlogged blocks, a replay's headroom before
   * the first logged grant) are reported too; absent, from the lowest record.
   */
  start?: bigint;
  /** Sorted by first. */
  grants: AsyncIterable<LoggedGrant>;
  /** Answered runs, sorted by first. */
  answered: AsyncIterable<Span>;
  /** Runs given up unanswered, with why (audited sequences), sorted by first. */
  releases?: AsyncIterable<Release>;
  /** The counter's reservation records, any order. */
  reservations: readonly LoggedReservation[];
  /** Grants claimed at or after this are audited number by number; earlier ones (or all, when null) only as blocks. */
  numbersFrom: Date | null;
  /**
   * Only these numbers are reported. The records are still read from the counter's first one (the
   * series' start and a replay's previous block lie below), up to `to`.
   */
  window?: Window;
  /** Whether anything was issued above the window: asked only when gaps end it. */
  issuedAbove?: () => Promise<boolean>;
}

export interface Tally {
  /** The series walked: first and last issued number (absent when nothing was issued). */
  first?: bigint;
  last?: bigint;
  answered: bigint;
  unproven: bigint;
  gaps: Record<Reason, { ranges: number; numbers: bigint }>;
}

type Stretch = Span & ({ kind: "answered" | "unproven" } | { kind: "gap"; gap: Gap });

/** One value of an async iterator at a time, looked at before it is taken. */
class Cursor<T> {
  readonly #it: AsyncIterator<T>;
  head: T | undefined;
  #done = false;
  constructor(it: AsyncIterable<T>) {
    this.#it = it[Symbol.asyncIterator]();
  }
  async peek(): Promise<T | undefined> {
    if (this.head === undefined && !this.#done) {
      const r = await this.#it.next();
      if (r.done) this.#done = true;
      else this.head = r.value;
    }
    return this.head;
  }
  take(): void {
    this.head = undefined;
  }
}

/** What a given-up gap's evidence says after the grant's id when no release covers it. */
export const NO_RELEASE = "no release recorded: its worker died (or could not append its log)";

async function* none<T>(): AsyncGenerator<T> {}

/** Answered runs with overlapping and touching ones joined (an answer sent again is recorded again). */
async function* joined(runs: AsyncIterable<Span>): AsyncGenerator<Span> {
  let run: Span | undefined;
  for await (const r of runs) {
    if (run && r.first <= run.last + 1n) {
      if (r.last > run.last) run = { first: run.first, last: r.last };
      continue;
    }
    if (run) yield run;
    run = { first: r.first, last: r.last };
  }
  if (run) yield run;
}

const min = (...xs: (bigint | undefined)[]) =>
  xs.reduce<bigint | undefined>((m, x) => (x === undefined || (m !== undefined && m <= x) ? m : x), undefined);

/** Every stretch of the number line the records reach, in order, from the lowest record on. */
async function* stretches(input: WalkInput): AsyncGenerator<Stretch> {
  const grants = new Cursor(input.grants);
  const answered = new Cursor(joined(input.answered));
  const releases = new Cursor<Release>(input.releases ?? none());
  const { to } = input.window ?? {};
  const headroom = replayHeadroom(input.reservations);
  // The epoch the counter was created under: a first logged grant of a later epoch follows a replay.
  const firstEpoch = input.reservations.reduce<number | undefined>((m, r) => (m === undefined || r.epoch < m ? r.epoch : m), undefined);
  let prev: LoggedGrant | undefined;
  let pos: bigint | undefined;
  for (;;) {
    let a = await answered.peek();
    while (a && pos !== undefined && a.last < pos) {
      answered.take();
      a = await answered.peek();
    }
    let g = await grants.peek();
    while (g && pos !== undefined && g.last < pos) {
      prev = g;
      grants.take();
      g = await grants.peek();
    }
    if (pos === undefined) {
      pos = min(a?.first, g?.first);
      if (pos === undefined) return;
      if (input.start !== undefined && input.start < pos) pos = input.start;
      continue;
    }
    if ((!a && !g) || (to !== undefined && pos > to)) return;
    if (a && a.first <= pos) {
      const last = min(a.last, to) as bigint;
      yield { kind: "answered", first: pos, last };
      pos = last + 1n;
      continue;
    }
    const beforeAnswer = a ? a.first - 1n : undefined;
    if (g && g.first <= pos) {
      let last = min(g.last, beforeAnswer, to) as bigint;
      if (g.abandoned) {
        yield {
          kind: "gap",
          first: pos,
          last,
          gap: { first: pos, last, reason: "abandoned-claim", worker: g.worker, at: g.at, evidence: g.id },
        };
      } else if (input.numbersFrom !== null && g.at >= input.numbersFrom) {
        // Why, from the release that covers pos (up to its end), else none up to the next release.
        let r = await releases.peek();
        while (r && r.last < pos) {
          releases.take();
          r = await releases.peek();
        }
        const released = r !== undefined && r.first <= pos ? r : undefined;
        if (released) last = min(last, released.last) as bigint;
        else if (r && r.first <= last) last = r.first - 1n;
        const why = released ? released.why : NO_RELEASE;
        yield {
          kind: "gap",
          first: pos,
          last,
          gap: { first: pos, last, reason: "given-up", worker: g.worker, at: g.at, evidence: `${g.id}: ${why}` },
        };
      } else yield { kind: "unproven", first: pos, last };
      pos = last + 1n;
      continue;
    }
    // In no grant and not answered, up to the next record.
    const last = min(beforeAnswer, g ? g.first - 1n : undefined, to);
    if (last === undefined) return;
    const before = prev?.epoch ?? firstEpoch;
    const replay = g && before !== undefined && g.epoch > before ? headroom(before, g.epoch) : undefined;
    const gap: Gap =
      replay && last <= replay.reserved
        ? { first: pos, last, reason: "replay-headroom", worker: replay.record.worker, at: replay.record.at, evidence: replay.record.id }
        : { first: pos, last, reason: "unexplained", worker: null, at: null, evidence: null };
    yield { kind: "gap", first: pos, last, gap };
    pos = last + 1n;
  }
}

/**
 * For a counter whose grants moved from epoch `before` to `after`: the highest number reserved under
 * the earlier epochs (a replay restores a relaxed counter's cur to it, so numbers up to it may be
 * skipped), and the record that started the new epoch.
 */
function replayHeadroom(reservations: readonly LoggedReservation[]) {
  return (before: number, after: number): { reserved: bigint; record: LoggedReservation } | undefined => {
    let reserved: bigint | undefined;
    let record: LoggedReservation | undefined;
    for (const r of reservations) {
      if (r.epoch < after && (reserved === undefined || r.max > reserved)) reserved = r.max;
      if (r.epoch > before && r.epoch <= after && (!record || r.at < record.at)) record = r;
    }
    return reserved !== undefined && record ? { reserved, record } : undefined;
  };
}

/**
 * Walks the counter: every gap goes to `onGap` in order, as the walk finds it; `onProgress` hears the
 * position now and then. Gaps after the last issued number are not walked: the series runs from the
 * counter's start (when `start` is given; else from the first number answered or in a block-level
 * grant) to the last number issued. With a
 * window, only its part of the series is reported.
 */
export async function walk(input: WalkInput, onGap: (g: Gap) => void | Promise<void>, onProgress?: (at: bigint) => void): Promise<Tally> {
  const tally: Tally = {
    answered: 0n,
    unproven: 0n,
    gaps: noGaps(),
  };
  const from = input.window?.from;
  // Gaps wait until a number issued after them shows they lie inside the series.
  let pending: Gap[] = [];
  let started = input.start !== undefined; // from the start on, a gap lies inside the series
  const flush = async () => {
    for (const g of pending) {
      const t = tally.gaps[g.reason];
      t.ranges++;
      t.numbers += g.last - g.first + 1n;
      tally.first ??= g.first;
      tally.last = g.last;
      await onGap(g);
    }
    pending = [];
  };
  for await (const s of stretches(input)) {
    onProgress?.(s.last);
    const first = from !== undefined && s.first < from ? from : s.first; // below the window: not reported
    if (s.kind === "gap") {
      if (started && first <= s.last) pending.push({ ...s.gap, first });
      continue;
    }
    await flush();
    started = true;
    if (first > s.last) continue;
    tally.first ??= first;
    tally.last = s.last;
    tally[s.kind] += s.last - first + 1n;
  }
  if (pending.length > 0 && (await input.issuedAbove?.())) await flush();
  return tally;
}
