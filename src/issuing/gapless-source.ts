/**
 * Gapless numbering (docs/design.md, Gapless numbering): numbers of gapless sequences come from
 * MongoDB, one document each, written before any reply names them; no Redis block is ever held.
 * Per step, one insert per counter: the step's requests of one (sequence, period) take the next
 * numbers together, ordered, from the highest one plus one. A number another writer took meanwhile
 * (a zombie owner) fails the insert at that number: the source reads the highest again and takes
 * the rest above it, a bounded number of times. A requestId that was given numbers before gets them
 * back from MongoDB, whenever it retries. CONFIRM and VOID settle pending numbers of one counter.
 */
import { IddError } from "../core/errors.js";
import { type Range, toRanges } from "../core/range.js";
import type { Settle } from "../protocol/request.js";
import type { SequenceDef } from "../sequences/sequence-def.js";
import type { Store } from "../storage/store.js";

/** What gapless numbering needs of the MongoDB store. */
export type GaplessStore = Pick<
  Store,
  "gaplessHighest" | "insertGapless" | "gaplessOfRequests" | "gaplessExisting" | "gaplessSettlements" | "settleGapless"
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

/** How often a step reads the highest number again after another writer took the ones it tried. */
const MAX_ATTEMPTS = 5;

export class GaplessSource {
  readonly #store: GaplessStore;
  readonly #worker: string;
  /**
   * The highest number this worker knows taken, per counter: the next insert starts above it
   * without reading first. Never above the real highest (documents are never deleted), so a stale
   * one only costs an insert refused at its first number and a read.
   */
  readonly #highest = new Map<string, bigint>();

  constructor(store: GaplessStore, worker: string) {
    this.#store = store;
    this.#worker = worker;
  }

  /** Numbers for a step's gapless ISSUEs, in their order: those their requestIds were given before, else new ones. */
  async issue(wants: GaplessWant[]): Promise<Map<GaplessWant, GaplessTaken>> {
    const out = new Map<GaplessWant, GaplessTaken>();
    const twins = new Map<GaplessWant, GaplessWant>();
    const bySequence = groupBy(wants, (w) => w.def.name);
    for (const [sequence, ws] of bySequence) {
      const fresh = await this.#again(sequence, ws, out, twins);
      for (const [, counter] of groupBy(fresh, (w) => w.period)) {
        try {
          await this.#take(counter, out);
        } catch (e) {
          const failed = e instanceof IddError ? e : new IddError("UNAVAILABLE", (e as Error).message);
          for (const w of counter) if (!out.has(w)) out.set(w, failed);
        }
      }
    }
    for (const [twin, first] of twins) out.set(twin, out.get(first) as GaplessTaken);
    return out;
  }

  /**
   * Answers the wants whose requestId was given numbers before; a requestId twice in the step is
   * answered as its first (`twins`). Returns the wants that need new numbers.
   */
  async #again(
    sequence: string,
    ws: GaplessWant[],
    out: Map<GaplessWant, GaplessTaken>,
    twins: Map<GaplessWant, GaplessWant>,
  ): Promise<GaplessWant[]> {
    const ids = [...new Set(ws.map((w) => w.requestId).filter((id) => id !== ""))];
    const found = groupBy(await this.#store.gaplessOfRequests(sequence, ids), (n) => n.requestId);
    const first = new Map<string, GaplessWant>();
    const fresh: GaplessWant[] = [];
    for (const w of ws) {
      const mine = w.requestId === "" ? undefined : found.get(w.requestId);
      const earlier = w.requestId === "" ? undefined : first.get(w.requestId);
      if (mine) {
        // The numbers of the first issue (one worker, one instant), should a zombie owner have issued the requestId too.
        const [a] = mine as [(typeof mine)[number]];
        const same = mine.filter((n) => n.period === a.period && n.worker === a.worker && n.issuedAt.getTime() === a.issuedAt.getTime());
        out.set(w, { period: a.period, ranges: toRanges(same.map((n) => n.number)), at: a.issuedAt.getTime() });
      } else if (earlier) twins.set(w, earlier);
      else {
        if (w.requestId !== "") first.set(w.requestId, w);
        fresh.push(w);
      }
    }
    return fresh;
  }

  /** New numbers for one counter's wants: ordered inserts from the highest number plus one, again when another writer raced. */
  async #take(ws: GaplessWant[], out: Map<GaplessWant, GaplessTaken>): Promise<void> {
    const [{ def, period, now }] = ws as [GaplessWant];
    const key = `${def.name}\u0000${period ?? ""}`;
    const got = new Map<GaplessWant, bigint[]>(ws.map((w) => [w, []]));
    const issuedAt = new Date(now);
    const expiresAt = new Date(now + def.gapless.confirmTimeoutMs);
    for (let attempt = 1; ; attempt++) {
      const highest = this.#highest.get(key) ?? (await this.#store.gaplessHighest(def.name, period)) ?? def.start - 1n;
      let next = highest + 1n;
      const docs = [];
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
        break;
      }
      this.#highest.delete(key); // another writer took the number after the last inserted: read the highest again
      if (attempt >= MAX_ATTEMPTS)
        throw new IddError(
          "UNAVAILABLE",
          `gapless sequence "${def.name}": another writer kept taking the next numbers (${attempt} attempts)`,
        );
    }
    for (const w of ws) if (!out.has(w)) out.set(w, { period, ranges: toRanges(got.get(w) as bigint[]), at: now });
  }

  /**
   * Confirms, or voids with its reason, pending numbers of one counter; returns them as ranges.
   * Numbers already settled the same way are settled (twice is once); a number never issued, or
   * settled the other way, fails the request (GAPLESS_NOT_PENDING) before anything is settled.
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
    const to = s.action === "CONFIRM" ? "confirmed" : "voided";
    const issued = await this.#store.gaplessExisting(def.name, s.period, numbers);
    const before = await this.#store.gaplessSettlements(def.name, s.period, numbers);
    const stateOf = (n: bigint) => before.get(n)?.state ?? (issued.has(n) ? "pending" : "never issued");
    const refused = numbers.filter((n) => !issued.has(n) || (before.has(n) && before.get(n)?.state !== to));
    if (refused.length > 0) throw notSettled(def, s, refused, stateOf, "nothing was settled");
    const todo = numbers.filter((n) => !before.has(n)); // settled this way before: twice is once
    const { taken } = await this.#store.settleGapless(
      { sequence: def.name, period: s.period, numbers: todo },
      to,
      s.reason,
      new Date(now),
      this.#worker,
    );
    // Settled meanwhile by the sweep (expired) or another owner: the other way, say which.
    const after = await this.#store.gaplessSettlements(def.name, s.period, taken);
    const lost = taken.filter((n) => after.get(n)?.state !== to);
    if (lost.length > 0) throw notSettled(def, s, lost, (n) => after.get(n)?.state ?? "unknown", "the others were settled");
    return { period: s.period, ranges: toRanges(numbers) };
  }
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

function notSettled(def: SequenceDef, s: Settle, numbers: bigint[], stateOf: (n: bigint) => string, rest: string): IddError {
  const shown = numbers
    .slice(0, 20)
    .map((n) => `${n} (${stateOf(n)})`)
    .join(", ");
  const more = numbers.length > 20 ? ` and ${numbers.length - 20} more` : "";
  const where = s.period ? ` in period ${s.period}` : "";
  return new IddError("GAPLESS_NOT_PENDING", `cannot ${s.action} numbers of "${def.name}"${where}: ${shown}${more}; ${rest}`);
}
