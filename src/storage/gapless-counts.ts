/**
 * How many numbers each gapless sequence has per state, from bounded reads (docs/design.md,
 * Gapless numbering, "Counts"): not a `$group` over `gapless`, which FerretDB answers by reading
 * every number ever issued (12.9 s for 50,000).
 *
 * `gapless_counts`: one checkpoint per counter, `_id` `<sequence>/<period or ->`: `sequence`,
 * `period`, `through` (int64), `confirmed`, `voided`: the numbers start..through all left pending,
 * `confirmed` of them confirmed and `voided` voided, as their documents in `gapless` say (the copy
 * the old scan counted). A number leaves pending once and never changes again, so every checkpoint
 * ever written stays true: two sweeps writing at once, or one killed before its write, leave a true
 * checkpoint, at worst an older one (the next sweep reads further). Nothing is added to a stored
 * count (FerretDB's `$inc` is not atomic: 8 writers' 1,600 `$inc` on one `_id` left 488, tried on
 * the stack); each write replaces the whole checkpoint.
 *
 * A count reads the checkpoints (one document per counter), then, per counter, the numbers above
 * `through` by `_id` until the first that does not exist (start..highest is contiguous): the
 * numbers issued since the counter's oldest pending one, which the sweep voids at its expiry, so
 * at most about the issue rate × (confirm timeout + sweep interval), whatever the history. Then it
 * moves `through` up over the numbers it found settled from the bottom.
 *
 * A counter is registered (its checkpoint inserted, `through` start - 1, first insert wins) by each
 * worker before its first insert of a number of that counter, so a counter with numbers has a
 * checkpoint. Counters numbered before checkpoints existed are registered once per pool from a
 * scan of `gapless` (then the marker `_id` `registered`), `through` their sequence's start - 1.
 */
import type { Collection, Long } from "mongodb";
import { insertFirstWins, type MongoConnection } from "./connection.js";
import type { GaplessRepository, GaplessState, SettledState } from "./gapless.js";
import { fromInt64, toInt64 } from "./int64.js";

/** How many numbers of one sequence are in one state. */
export interface GaplessCount {
  sequence: string;
  state: GaplessState;
  numbers: number;
}

interface CheckpointDoc {
  _id: string;
  sequence: string;
  period: string | null;
  through: bigint | Long;
  confirmed: number;
  voided: number;
}

/** The marker of the one-time registration of the counters numbered before checkpoints existed. */
const REGISTERED = "registered";
/** Numbers of one counter looked up at once (one `_id` lookup each) above its checkpoint: first, then doubling up to the most. */
const FIRST_LOOKUPS = 4;
const MOST_LOOKUPS = 128;

const STATES = ["pending", "confirmed", "voided"] as const;

const counterId = (sequence: string, period: string | null): string => `${sequence}/${period ?? "-"}`;

export class GaplessCountsRepository {
  readonly #connection: MongoConnection;
  readonly #numbers: GaplessRepository;
  readonly #checkpoints: Collection<CheckpointDoc>;
  /**
   * Per counter, the numbers above its checkpoint this repository found settled: a number leaves
   * pending once, so they need no second lookup (this worker's memory; another sweeper reads them once).
   */
  readonly #settledAbove = new Map<string, Map<bigint, SettledState>>();
  /** Whether the one-time registration is known done (then no lookup of its marker). */
  #registered = false;

  /** A sequence's start (a definition's; it never changes), or undefined when it is not defined. */
  readonly #startOf: (sequence: string) => Promise<bigint | undefined>;

  constructor(connection: MongoConnection, numbers: GaplessRepository, startOf: (sequence: string) => Promise<bigint | undefined>) {
    this.#connection = connection;
    this.#numbers = numbers;
    this.#startOf = startOf;
    this.#checkpoints = connection.collection("gapless_counts");
  }

  /** Registers a counter before its first number is inserted (a second registration is refused, the checkpoint kept). */
  async register(sequence: string, period: string | null, start: bigint): Promise<void> {
    await this.#insert([{ sequence, period, through: start - 1n }]);
  }

  /** Each gapless sequence's numbers per state; only states with numbers. */
  async counts(): Promise<GaplessCount[]> {
    await this.#registerOnce();
    const checkpoints = await this.#connection.call("reads", () => this.#checkpoints.find({}).toArray());
    const pending = new Map<string, Set<bigint>>();
    for (const p of await this.#numbers.pending()) {
      const k = counterId(p.sequence, p.period);
      pending.set(k, (pending.get(k) ?? new Set()).add(p.number));
    }
    const totals = new Map<string, Record<GaplessState, number>>();
    for (const cp of checkpoints) {
      if (cp._id === REGISTERED) continue;
      const counted = await this.#count(cp, pending.get(cp._id) ?? new Set());
      const t = totals.get(cp.sequence) ?? { pending: 0, confirmed: 0, voided: 0 };
      for (const s of STATES) t[s] += counted[s];
      totals.set(cp.sequence, t);
    }
    return [...totals].flatMap(([sequence, t]) =>
      STATES.flatMap((state) => (t[state] > 0 ? [{ sequence, state, numbers: t[state] }] : [])),
    );
  }

  /**
   * One counter's numbers per state: its checkpoint plus the numbers above it, each known pending
   * (`pending`, read before), known settled (`#settledAbove`) or looked up; moves the checkpoint up.
   */
  async #count(cp: CheckpointDoc, pending: Set<bigint>): Promise<Record<GaplessState, number>> {
    const from = fromInt64(cp.through);
    const known = this.#settledAbove.get(cp._id) ?? new Map<bigint, SettledState>();
    let through = from;
    const settled = { confirmed: cp.confirmed, voided: cp.voided };
    const above = { pending: 0, confirmed: 0, voided: 0 };
    const tally = (n: bigint, state: GaplessState): void => {
      if (state !== "pending" && above.pending === 0) {
        through = n;
        settled[state]++;
      } else above[state]++;
    };
    let n = from + 1n;
    for (let batch = FIRST_LOOKUPS; ; batch = Math.min(2 * batch, MOST_LOOKUPS)) {
      const unknown: bigint[] = [];
      for (; unknown.length < batch; n++) {
        const state = pending.has(n) ? "pending" : known.get(n);
        if (state === undefined) unknown.push(n);
        else if (unknown.length === 0) tally(n, state);
        else break; // counted in order: after the lookups
      }
      if (unknown.length === 0) break; // cannot happen: the number above the highest is unknown
      const states = await this.#numbers.states(cp.sequence, cp.period, unknown);
      const end = states.indexOf(undefined);
      for (const [i, state] of (end < 0 ? states : states.slice(0, end)).entries()) {
        const number = unknown[i] as bigint;
        if (state !== "pending") known.set(number, state as SettledState);
        tally(number, state as GaplessState);
      }
      if (end >= 0) break; // the first number not issued: the counter's highest is the one below
      n = (unknown.at(-1) as bigint) + 1n;
    }
    for (const k of known.keys()) if (k <= through) known.delete(k);
    this.#settledAbove.set(cp._id, known);
    if (through > from)
      await this.#connection.call("writes", () =>
        this.#checkpoints.replaceOne({ _id: cp._id }, { sequence: cp.sequence, period: cp.period, through: toInt64(through), ...settled }),
      );
    return { pending: above.pending, confirmed: settled.confirmed + above.confirmed, voided: settled.voided + above.voided };
  }

  /** Registers, once per pool, the counters numbered before checkpoints existed: a scan of `gapless`, then the marker. */
  async #registerOnce(): Promise<void> {
    if (this.#registered) return;
    const marker = await this.#connection.call("reads", () => this.#checkpoints.findOne({ _id: REGISTERED }, { projection: { _id: 1 } }));
    if (!marker) {
      const counters = await this.#numbers.counters();
      const starts = new Map<string, bigint | undefined>();
      for (const c of counters) if (!starts.has(c.sequence)) starts.set(c.sequence, await this.#startOf(c.sequence));
      // A sequence's numbers are start..highest; one without a definition (never: definitions are not deleted) is left out.
      await this.#insert(
        counters.flatMap((c) => {
          const start = starts.get(c.sequence);
          return start === undefined ? [] : [{ sequence: c.sequence, period: c.period, through: start - 1n }];
        }),
      );
      await this.#connection.call("writes", () => insertFirstWins(this.#checkpoints, [{ _id: REGISTERED } as CheckpointDoc], false));
    }
    this.#registered = true;
  }

  async #insert(counters: { sequence: string; period: string | null; through: bigint }[]): Promise<void> {
    if (counters.length === 0) return;
    const docs = counters.map((c) => ({
      _id: counterId(c.sequence, c.period),
      ...c,
      through: toInt64(c.through),
      confirmed: 0,
      voided: 0,
    }));
    await this.#connection.call("writes", () => insertFirstWins(this.#checkpoints, docs, false));
  }
}
