/**
 * Gapless numbering (docs/design.md, Gapless numbering): numbers of gapless sequences come from
 * MongoDB, one document each, written before any reply names them; no Redis block is ever held.
 * Per step, one insert per counter: the step's requests of one (sequence, period) take the next
 * numbers together, ordered, from the highest one plus one. A number another writer took meanwhile
 * (a zombie owner) fails the insert at that number: the source finds the highest again and takes
 * the rest above it, a bounded number of times. A requestId that was given numbers before gets them
 * back from MongoDB, whenever it retries (the numbers taken for the retry are voided at once, with
 * a reason saying so). CONFIRM and VOID settle pending numbers of one counter.
 *
 * Every lookup is by `_id` (src/storage/gapless.ts says why). The highest number of a counter is
 * known in memory after the first take; otherwise it is found by lookups of single numbers,
 * doubling then halving (a counter's numbers are exactly start..highest, so "n exists" is "n ≤
 * highest"): about 2·log2(numbers taken) lookups, once per counter and worker. Before its first
 * insert of a counter, a worker registers the counter for the counts (one insert, refused but for
 * the first worker's: src/storage/gapless-counts.ts).
 *
 * A number's `expiresAt` (when the sweep voids it, judged on MongoDB's time) is MongoDB's time at
 * its issue plus the confirm timeout, from the store's estimate of MongoDB's clock
 * (`Store.serverNow`: no round trip per step), never the worker's wall clock: a worker whose clock is
 * behind would otherwise write a lease that ends early in the sweep's time, and its client's CONFIRM
 * would be refused. `issuedAt` is the worker's clock, as every date it writes.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { IddError } from "../../../core/errors.js";
import { type Range, toRanges } from "../../../core/range.js";
import type { Settle } from "../../../protocol/request.js";
import type { SequenceDef } from "../../../sequences/sequence-def.js";
import type { Settlement } from "../../../storage/gapless.js";
import type { Store } from "../../../storage/store.js";
import type { GaplessForecasts } from "./gapless-forecast.js";

/** What gapless numbering needs of the MongoDB store. */
export type GaplessStore = Pick<
  Store,
  | "gaplessExists"
  | "insertGapless"
  | "gaplessAnswers"
  | "recordGaplessAnswers"
  | "gaplessSettlements"
  | "settleGapless"
  | "registerGaplessCounter"
  | "serverNow"
>;

/** A gapless sequence's definition. */
export type GaplessDef = SequenceDef & { gapless: NonNullable<SequenceDef["gapless"]> };

/** `def` when its sequence is gapless. */
export const gaplessDef = (def: SequenceDef): GaplessDef | undefined => (def.gapless ? (def as GaplessDef) : undefined);

/** One ISSUE of a gapless sequence in a step. */
export interface GaplessWant {
  def: GaplessDef;
  period: string | null;
  count: number;
  requestId: string;
  /** The step's clock reading: the numbers' issuedAt. */
  now: number;
}

/** What one ISSUE was given: its numbers, or why none (an error; numbers it was given in part stay pending and expire). */
export type GaplessTaken = { period: string | null; ranges: Range[]; at: number } | IddError;

/** How often a step finds the highest number again after another writer took the ones it tried. */
const MAX_ATTEMPTS = 5;
/**
 * After a lost race a writer waits a random time below this, doubled per attempt (at most 150 ms
 * in all, only while another writer races it), before it tries again: writers that lost together
 * would otherwise try the same next numbers together again, and give up after MAX_ATTEMPTS. Four
 * writers on one counter, 30 wants each, on the stack: 3–8 of 120 refused UNAVAILABLE without the
 * wait, 1–2 with it.
 */
const BACKOFF_MS = 5;

export class GaplessSource {
  readonly #store: GaplessStore;
  readonly #worker: string;
  /**
   * The highest number this worker knows taken, per counter: the next insert starts above it
   * without a lookup. Never above the real highest (documents are never deleted), so a stale one
   * only costs an insert refused at its first number and a search.
   */
  readonly #highest = new Map<string, bigint>();
  /** Told the highest number and how many were taken after each insert (memory only), for the capacity forecasts. */
  readonly #forecasts: GaplessForecasts | undefined;
  /** MongoDB's time now: what `expiresAt` is reckoned from. */
  readonly #serverNow: () => Promise<number>;

  /** `serverNow`: MongoDB's time (default the store's estimate; a test's may be behind it, as numbers issued earlier). */
  constructor(store: GaplessStore, worker: string, forecasts?: GaplessForecasts, serverNow = () => store.serverNow()) {
    this.#store = store;
    this.#worker = worker;
    this.#forecasts = forecasts;
    this.#serverNow = serverNow;
  }

  /** Numbers for a step's gapless ISSUEs, in their order: those their requestIds were given before, else new ones. */
  async issue(wants: GaplessWant[]): Promise<Map<GaplessWant, GaplessTaken>> {
    const out = new Map<GaplessWant, GaplessTaken>();
    const twins = new Map<GaplessWant, GaplessWant>();
    for (const [sequence, ws] of groupBy(wants, (w) => w.def.name)) {
      const fresh = this.#once(ws, twins);
      const answered: GaplessWant[] = [];
      for (const [, counter] of groupBy(fresh, (w) => w.period)) {
        try {
          await this.#take(counter, out);
          answered.push(...counter.filter((w) => w.requestId !== "" && !(out.get(w) instanceof IddError)));
        } catch (e) {
          const failed = e instanceof IddError ? e : new IddError("UNAVAILABLE", (e as Error).message);
          for (const w of counter) if (!out.has(w)) out.set(w, failed);
        }
      }
      await this.#record(sequence, answered, out, (ws[0] as GaplessWant).now);
    }
    for (const [twin, first] of twins) out.set(twin, out.get(first) as GaplessTaken);
    return out;
  }

  /** Answers a requestId twice in the step as its first (`twins`); returns the others. */
  #once(ws: GaplessWant[], twins: Map<GaplessWant, GaplessWant>): GaplessWant[] {
    const first = new Map<string, GaplessWant>();
    const fresh: GaplessWant[] = [];
    for (const w of ws) {
      const earlier = w.requestId === "" ? undefined : first.get(w.requestId);
      if (earlier) twins.set(w, earlier);
      else {
        if (w.requestId !== "") first.set(w.requestId, w);
        fresh.push(w);
      }
    }
    return fresh;
  }

  /**
   * Records the answers of requestIds. A requestId answered before (a retry: after the Redis dedupe
   * window, after a crash before its answer was recorded in Redis, or raced by a zombie) keeps its
   * first answer, which replaces this one; the numbers just taken for it are voided at once, with
   * a reason that says so. One write a step; reads only for retries.
   */
  async #record(sequence: string, answered: GaplessWant[], out: Map<GaplessWant, GaplessTaken>, now: number): Promise<void> {
    const answers = answered.map((w) => {
      const t = out.get(w) as Exclude<GaplessTaken, IddError>;
      return { sequence, requestId: w.requestId, period: t.period, ranges: t.ranges, worker: this.#worker, issuedAt: new Date(t.at) };
    });
    const retries = await this.#store.recordGaplessAnswers(answers);
    if (retries.size === 0) return;
    const ids = [...retries].map((i) => answered[i]?.requestId as string);
    const first = await this.#store.gaplessAnswers(sequence, ids);
    for (const i of retries) {
      const w = answered[i] as GaplessWant;
      const a = first.get(w.requestId);
      if (!a) continue; // cannot happen: its insert was refused because it exists
      const mine = answers[i] as (typeof answers)[number];
      out.set(w, { period: a.period, ranges: a.ranges, at: a.issuedAt.getTime() });
      const numbers = mine.ranges.flatMap((r) => Array.from({ length: Number(r.last - r.first + 1n) }, (_, k) => r.first + BigInt(k)));
      const reason = `a retry of request ${w.requestId.slice(0, 100)}, answered with its first numbers`;
      await this.#store.settleGapless({ sequence, period: mine.period, numbers }, "voided", reason, new Date(now), this.#worker);
    }
  }

  /** New numbers for one counter's wants: ordered inserts from the highest number plus one, again when another writer raced. */
  async #take(ws: GaplessWant[], out: Map<GaplessWant, GaplessTaken>): Promise<void> {
    const [{ def, period, now }] = ws as [GaplessWant];
    const key = `${def.name}/${period ?? "-"}`;
    const got = new Map<GaplessWant, bigint[]>(ws.map((w) => [w, []]));
    const issuedAt = new Date(now);
    const expiresAt = new Date((await this.#serverNow()) + def.gapless.confirmTimeoutMs);
    // Before this worker's first insert of the counter, so that every counter with numbers is counted (src/storage/gapless-counts.ts).
    if (!this.#highest.has(key)) await this.#store.registerGaplessCounter(def.name, period, def.start);
    for (let attempt = 1; ; attempt++) {
      const highest = this.#highest.get(key) ?? (await this.#highestOf(def, period));
      let next = highest + 1n;
      const docs: { want: GaplessWant; number: bigint }[] = [];
      for (const w of ws) {
        if (out.has(w)) continue;
        const need = BigInt(w.count - (got.get(w) as bigint[]).length);
        if (next + need - 1n > def.maxValue) {
          out.set(w, exhausted(def, period));
          continue;
        }
        for (let i = 0n; i < need; i++) docs.push({ want: w, number: next + i });
        next += need;
      }
      const inserted = await this.#store.insertGapless(
        docs.map((d) => ({
          sequence: def.name,
          period,
          number: d.number,
          requestId: d.want.requestId,
          worker: this.#worker,
          issuedAt,
          expiresAt,
        })),
      );
      for (const d of docs.slice(0, inserted)) (got.get(d.want) as bigint[]).push(d.number);
      if (inserted === docs.length) {
        if (docs.length > 0) this.#highest.set(key, next - 1n);
        this.#forecasts?.taken(def, period, next - 1n, inserted);
        break;
      }
      this.#highest.set(key, docs[inserted]?.number as bigint); // taken by another writer: the highest is at least that
      this.#forecasts?.taken(def, period, docs[inserted]?.number as bigint, inserted);
      if (attempt >= MAX_ATTEMPTS)
        throw new IddError(
          "UNAVAILABLE",
          `gapless sequence "${def.name}": another writer kept taking the next numbers (${attempt} attempts)`,
        );
      await sleep(Math.random() * BACKOFF_MS * 2 ** attempt);
      this.#highest.set(key, await this.#highestOf(def, period, docs[inserted]?.number));
    }
    for (const w of ws) if (!out.has(w)) out.set(w, { period, ranges: toRanges(got.get(w) as bigint[]), at: now });
  }

  /** The highest number of a counter (start - 1 before its first), found by lookups of single numbers above `known`. */
  #highestOf(def: SequenceDef, period: string | null, known = def.start - 1n): Promise<bigint> {
    return gaplessHighest(this.#store, def, period, known);
  }

  /**
   * Confirms, or voids with its reason, numbers of one counter; returns them as ranges. Numbers
   * settled the same way before are settled (twice is once). A number never issued fails the request
   * before anything is settled; one settled the other way is listed (GAPLESS_NOT_PENDING) and the
   * request's others are settled.
   */
  async settle(def: SequenceDef, s: Settle, now: number): Promise<{ period: string | null; ranges: Range[] }> {
    if (!def.gapless) throw new IddError("NOT_GAPLESS", `sequence "${def.name}" is not gapless: its numbers are not confirmed or voided`);
    const restarts = def.period !== "never";
    if (restarts !== (s.period !== null))
      throw new IddError(
        "BAD_REQUEST",
        restarts
          ? `sequence "${def.name}" restarts every ${def.period} period: name the period the numbers belong to`
          : `sequence "${def.name}" never restarts: its numbers have no period`,
      );
    const numbers = [...new Set(s.numbers)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    // A counter's numbers are start..highest: one lookup of the largest says whether all were issued.
    const last = numbers.at(-1) as bigint;
    if ((numbers[0] as bigint) < def.start || !(await this.#store.gaplessExists(def.name, s.period, last))) {
      const highest = await this.#highestOf(def, s.period);
      const never = numbers.filter((n) => n < def.start || n > highest);
      throw notSettled(def, s, never, () => "never issued", "nothing was settled");
    }
    const to = s.action === "CONFIRM" ? "confirmed" : "voided";
    const { taken } = await this.#store.settleGapless(
      { sequence: def.name, period: s.period, numbers },
      to,
      s.reason,
      new Date(now),
      this.#worker,
    );
    const before = await this.#store.gaplessSettlements(def.name, s.period, taken);
    // Once again only what this request asks: a CONFIRM of a confirmed number, a VOID of one voided
    // with its reason. A VOID of a number the sweep expired (or voided for another reason) is
    // refused: its client would be told its reason stands where the audit shows another.
    const same = (b: Settlement | undefined) => b?.state === to && (to === "confirmed" || b.reason === s.reason);
    const refused = taken.filter((n) => !same(before.get(n)));
    if (refused.length > 0)
      throw notSettled(
        def,
        s,
        refused,
        (n) => shownState(before.get(n)),
        refused.length === numbers.length ? "nothing was settled" : "the others were settled",
      );
    return { period: s.period, ranges: toRanges(numbers) };
  }
}

/**
 * The highest number of a gapless counter: MongoDB's high mark (start - 1 before its first), found
 * by lookups of single numbers by `_id` above `known`, doubling then halving (start..highest is
 * contiguous, so "n exists" is "n ≤ highest"); also `idd seq show`'s, for its forecast.
 */
export async function gaplessHighest(
  store: Pick<GaplessStore, "gaplessExists">,
  def: SequenceDef,
  period: string | null,
  known = def.start - 1n,
): Promise<bigint> {
  const exists = (n: bigint) => store.gaplessExists(def.name, period, n);
  let lo = known; // exists, or start - 1
  let step = 1n;
  while (lo + step <= def.maxValue && (await exists(lo + step))) {
    lo += step;
    step *= 2n;
  }
  let hi = lo + step; // does not exist (or lies past the max value)
  while (hi - lo > 1n) {
    const mid = (lo + hi) / 2n;
    if (await exists(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

function groupBy<T, K>(items: T[], key: (t: T) => K): Map<K, T[]> {
  const m = new Map<K, T[]>();
  for (const t of items) {
    const k = key(t);
    const list = m.get(k);
    if (list) list.push(t);
    else m.set(k, [t]);
  }
  return m;
}

function exhausted(def: SequenceDef, period: string | null): IddError {
  return new IddError(
    "SEQUENCE_EXHAUSTED",
    `gapless sequence "${def.name}"${period ? ` (period ${period})` : ""} reached its max value ${def.maxValue}`,
  );
}

/** A settled number's state as a refusal names it: `confirmed`, or `voided: <reason>`. */
const shownState = (b: Settlement | undefined): string =>
  b === undefined ? "unknown" : b.state === "voided" ? `voided: ${(b.reason ?? "").slice(0, 100)}` : b.state;

function notSettled(def: SequenceDef, s: Settle, numbers: bigint[], stateOf: (n: bigint) => string, rest: string): IddError {
  const shown = numbers
    .slice(0, 20)
    .map((n) => `${n} (${stateOf(n)})`)
    .join(", ");
  const more = numbers.length > 20 ? ` and ${numbers.length - 20} more` : "";
  const where = s.period ? ` in period ${s.period}` : "";
  return new IddError("GAPLESS_NOT_PENDING", `cannot ${s.action} numbers of "${def.name}"${where}: ${shown}${more}; ${rest}`);
}
