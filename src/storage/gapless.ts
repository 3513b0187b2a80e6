/**
 * Gapless numbering's collections (docs/design.md, Gapless numbering). Every document a request
 * needs is found by its `_id`, built from its key: FerretDB (SQLite) answers an `_id` equality from
 * its primary key in milliseconds, while any other filter, `_id: {$in}` included, scans the
 * collection (seconds at 10,000 documents). Only the sweep's read of pending numbers (through the
 * `state_expires` index on the stack's build, stack/install.ts), the once-per-pool registration of
 * counters for the counts (./gapless-counts.ts, whose counts read by `_id`) and `idd audit` read
 * otherwise.
 *
 * `gapless`: one document per number of a gapless sequence, `_id` `<sequence>/<period or ->/<number>`.
 * A number exists iff its document does; `_id` (and the unique index on sequence, period, number)
 * lets no two writers take one number, and ordered inserts of highest+1, highest+2, … leave no hole.
 *
 * | field | |
 * |---|---|
 * | `sequence`, `period` | the counter (period null for sequences that never restart) |
 * | `number` | int64, the serial |
 * | `requestId`, `worker`, `issuedAt` | the issuing request's requestId ("" when it had none), the worker that issued it, when |
 * | `expiresAt` | when the sweep voids it, reason `expired`, unless it was settled before |
 * | `state` | `pending`, `confirmed` or `voided`: a copy of its `gapless_settled` document, which wins |
 * | `settledAt`, `settledBy`, `reason` | copies too; null while pending; `reason` only when voided |
 *
 * `gapless_settled`: one document per number confirmed or voided, the same `_id` as the number's:
 * `sequence`, `period`, `number`, `state` (`confirmed` or `voided`), `reason` (the VOID's, or
 * `expired`), `settledAt`, `settledBy` (the worker). The first CONFIRM or VOID of a number (or the
 * sweep's void) inserts it and no other can follow: FerretDB's conditional updates are not atomic
 * (two `updateMany({state: "pending"})` at once both match), its `_id`s are. The winner then copies
 * the outcome into the number's document; should a worker die between the two writes, the number
 * shows `pending` until the sweep, finding it past its expiry, copies the settlement over.
 *
 * `gapless_requests`: one document per request given gapless numbers, `_id` `<sequence>/<requestId>`:
 * `period`, `ranges` (int64 `first`, `last`), `worker`, `issuedAt`. A retry gets these numbers
 * back, whenever it comes; written after the numbers, the first answer of a requestId wins.
 *
 * `gapless_counts`: one checkpoint per counter, for the per-state counts (./gapless-counts.ts).
 *
 * Nothing is ever deleted.
 */
import type { Collection, Long } from "mongodb";
import type { Range } from "../core/range.js";
import { type IndexDef, insertFirstWins, type MongoConnection } from "./connection.js";
import { fromInt64, toInt64 } from "./int64.js";

export type GaplessState = "pending" | "confirmed" | "voided";
export type SettledState = "confirmed" | "voided";

export interface GaplessNumber {
  sequence: string;
  period: string | null;
  number: bigint;
  requestId: string;
  worker: string;
  issuedAt: Date;
  expiresAt: Date;
}

interface GaplessDoc extends Omit<GaplessNumber, "number"> {
  _id: string;
  number: bigint | Long;
  state: GaplessState;
  settledAt: Date | null;
  settledBy: string | null;
  reason: string | null;
}

/** Numbers of one counter. */
export interface CounterNumbers {
  sequence: string;
  period: string | null;
  numbers: bigint[];
}

/** A number of one counter, as the sweep reads it. */
export interface CounterNumber {
  sequence: string;
  period: string | null;
  number: bigint;
}

/** A document of `gapless_settled`: how one number was settled. */
export interface Settlement extends CounterNumber {
  state: SettledState;
  reason: string | null;
  settledAt: Date;
  settledBy: string;
}

interface SettlementDoc extends Omit<Settlement, "number"> {
  _id: string;
  number: bigint | Long;
}

/** One number of a gapless counter as `idd audit` reads it: its state as settled, and by whom. */
export interface GaplessEntry {
  number: bigint;
  state: GaplessState;
  reason: string | null;
  /** When it was settled (issued, while pending). */
  at: Date;
  /** The worker that settled it (issued it, while pending). */
  by: string;
  expiresAt: Date;
  id: string;
}

/** A document of `gapless_requests`: the numbers one request was given. */
export interface GaplessAnswer {
  sequence: string;
  requestId: string;
  period: string | null;
  ranges: Range[];
  worker: string;
  issuedAt: Date;
}

interface AnswerDoc extends Omit<GaplessAnswer, "ranges"> {
  _id: string;
  ranges: { first: bigint | Long; last: bigint | Long }[];
}

export const GAPLESS_INDEXES: readonly IndexDef[] = [
  { collection: "gapless", key: { sequence: 1, period: 1, number: 1 }, name: "counter_number", unique: true },
  { collection: "gapless", key: { state: 1, expiresAt: 1 }, name: "state_expires" },
];

/** The `_id` of a number's documents. */
export const numberId = (sequence: string, period: string | null, number: bigint): string => `${sequence}/${period ?? "-"}/${number}`;
const answerId = (sequence: string, requestId: string): string => `${sequence}/${requestId}`;

export class GaplessRepository {
  readonly #connection: MongoConnection;
  readonly #numbers: Collection<GaplessDoc>;
  readonly #settled: Collection<SettlementDoc>;
  readonly #answers: Collection<AnswerDoc>;

  constructor(connection: MongoConnection) {
    this.#connection = connection;
    this.#numbers = connection.collection("gapless");
    this.#settled = connection.collection("gapless_settled");
    this.#answers = connection.collection("gapless_requests");
  }

  /** Whether a number of a counter was issued. */
  async exists(sequence: string, period: string | null, number: bigint): Promise<boolean> {
    return this.#connection.call("reads", async () => {
      return (await this.#numbers.findOne({ _id: numberId(sequence, period, number) }, { projection: { _id: 1 } })) !== null;
    });
  }

  /**
   * Inserts numbers as pending, in order, stopping at the first that exists already (another writer
   * took it). Returns how many were inserted: all of them, or the ones before the taken number.
   */
  async insert(numbers: GaplessNumber[]): Promise<number> {
    if (numbers.length === 0) return 0;
    return this.#connection.call("writes", async () => {
      const docs = numbers.map((n) => ({
        _id: numberId(n.sequence, n.period, n.number),
        ...n,
        number: toInt64(n.number),
        state: "pending" as const,
        settledAt: null,
        settledBy: null,
        reason: null,
      }));
      const refused = await insertFirstWins(this.#numbers, docs, true);
      return refused.size === 0 ? numbers.length : Math.min(...refused);
    });
  }

  /** The answers recorded for these requestIds of a sequence, by requestId. */
  async answers(sequence: string, requestIds: string[]): Promise<Map<string, GaplessAnswer>> {
    const found = await Promise.all(
      requestIds.map((id) =>
        this.#connection.call("reads", () => this.#answers.findOne({ _id: answerId(sequence, id) }, { projection: { _id: 0 } })),
      ),
    );
    return new Map(found.flatMap((d) => (d ? [[d.requestId, answerOf(d)]] : [])));
  }

  /** Records answers; those whose requestId has one already keep theirs. Returns the indexes of those. */
  async recordAnswers(answers: GaplessAnswer[]): Promise<Set<number>> {
    if (answers.length === 0) return new Set();
    return this.#connection.call("writes", async () => {
      const docs = answers.map((a) => ({
        _id: answerId(a.sequence, a.requestId),
        ...a,
        ranges: a.ranges.map((r) => ({ first: toInt64(r.first), last: toInt64(r.last) })),
      }));
      return insertFirstWins(this.#answers, docs, false);
    });
  }

  /** How these numbers of a counter were settled (absent: not settled). */
  async settlements(sequence: string, period: string | null, numbers: bigint[]): Promise<Map<bigint, Settlement>> {
    const found = await Promise.all(
      numbers.map((n) =>
        this.#connection.call("reads", () => this.#settled.findOne({ _id: numberId(sequence, period, n) }, { projection: { _id: 0 } })),
      ),
    );
    return new Map(found.flatMap((d) => (d ? [[fromInt64(d.number), { ...d, number: fromInt64(d.number) }]] : [])));
  }

  /**
   * Settles numbers of a counter that were issued: a settlement each, the first one winning, then
   * its copy into the numbers' documents. Returns the numbers this call settled (`won`) and those
   * settled before or meanwhile by another call, either way (`taken`).
   */
  async settle(
    c: CounterNumbers,
    to: SettledState,
    reason: string | null,
    at: Date,
    by: string,
  ): Promise<{ won: bigint[]; taken: bigint[] }> {
    if (c.numbers.length === 0) return { won: [], taken: [] };
    const s = { sequence: c.sequence, period: c.period, state: to, reason: to === "voided" ? reason : null, settledAt: at, settledBy: by };
    const docs = c.numbers.map((n) => ({ _id: numberId(c.sequence, c.period, n), ...s, number: toInt64(n) }));
    const taken = await this.#connection.call("writes", () => insertFirstWins(this.#settled, docs, false));
    const won = c.numbers.filter((_, i) => !taken.has(i));
    await this.copy(won.map((number) => ({ ...s, number })));
    return { won, taken: c.numbers.filter((_, i) => taken.has(i)) };
  }

  /** Copies settlements into their numbers' documents (the winner's, or the sweep repairing a copy that was never made). */
  async copy(settlements: Settlement[]): Promise<void> {
    await Promise.all(
      settlements.map((s) =>
        this.#connection.call("writes", () =>
          this.#numbers.updateOne(
            { _id: numberId(s.sequence, s.period, s.number) },
            { $set: { state: s.state, reason: s.reason, settledAt: s.settledAt, settledBy: s.settledBy } },
          ),
        ),
      ),
    );
  }

  /** Up to `limit` numbers whose document says pending past their expiry (a scan on FerretDB: the sweep's, not a request's). */
  async expired(now: Date, limit: number): Promise<CounterNumber[]> {
    return this.#connection.call("reads", async () => {
      const docs = await this.#numbers
        .find({ state: "pending", expiresAt: { $lt: now } }, { projection: { _id: 0, sequence: 1, period: 1, number: 1 }, limit })
        .toArray();
      return docs.map((d) => ({ sequence: d.sequence, period: d.period, number: fromInt64(d.number) }));
    });
  }

  /** The periods of a gapless sequence that have numbers (`idd audit`; a scan on FerretDB). */
  async periods(sequence: string): Promise<(string | null)[]> {
    return this.#connection.call("reads", () => this.#numbers.distinct("period", { sequence }));
  }

  /**
   * A counter's numbers, lowest first, each with its state as settled (`gapless_settled` wins over
   * the copy in the number's document: a worker may have died between the two writes); streamed,
   * two cursors merged, for `idd audit`.
   */
  async *inOrder(sequence: string, period: string | null): AsyncGenerator<GaplessEntry> {
    const stream = this.#connection.stream.bind(this.#connection);
    const numbers = stream(this.#numbers.find({ sequence, period }, { batchSize: 10_000 }).sort({ number: 1 }));
    const settled = stream(this.#settled.find({ sequence, period }, { batchSize: 10_000 }).sort({ number: 1 }));
    try {
      let s = await settled.next();
      for await (const d of numbers) {
        const n = fromInt64(d.number);
        while (!s.done && fromInt64(s.value.number) < n) s = await settled.next();
        const won = !s.done && fromInt64(s.value.number) === n ? s.value : undefined;
        yield {
          number: n,
          state: won ? won.state : d.state,
          reason: won ? won.reason : d.reason,
          at: won ? won.settledAt : d.issuedAt,
          by: won ? won.settledBy : d.worker,
          expiresAt: d.expiresAt,
          id: d._id,
        };
      }
    } finally {
      await settled.return(undefined);
    }
  }

  /** The states of these numbers of a counter, as their documents say (one lookup by `_id` each); undefined: not issued. */
  async states(sequence: string, period: string | null, numbers: bigint[]): Promise<(GaplessState | undefined)[]> {
    return Promise.all(
      numbers.map((n) =>
        this.#connection.call("reads", async () => {
          const d = await this.#numbers.findOne({ _id: numberId(sequence, period, n) }, { projection: { _id: 0, state: 1 } });
          return d?.state;
        }),
      ),
    );
  }

  /** Every number whose document says pending (through the `state_expires` index: as many as are pending, not all ever issued). */
  async pending(): Promise<CounterNumber[]> {
    return this.#connection.call("reads", async () => {
      const docs = await this.#numbers.find({ state: "pending" }, { projection: { _id: 0, sequence: 1, period: 1, number: 1 } }).toArray();
      return docs.map((d) => ({ sequence: d.sequence, period: d.period, number: fromInt64(d.number) }));
    });
  }

  /** Every counter with numbers (a scan on FerretDB: once per pool, ./gapless-counts.ts). */
  async counters(): Promise<{ sequence: string; period: string | null }[]> {
    return this.#connection.call("reads", async () => {
      // FerretDB 1.24 has no `$min` (nor `$first`) accumulator: a counter's lowest number is its sequence's start.
      const rows = await this.#numbers
        .aggregate<{ _id: { sequence: string; period: string | null } }>([
          { $group: { _id: { sequence: "$sequence", period: "$period" }, n: { $sum: 1 } } },
        ])
        .toArray();
      return rows.map((r) => ({ sequence: r._id.sequence, period: r._id.period }));
    });
  }
}

function answerOf(d: Omit<AnswerDoc, "_id">): GaplessAnswer {
  return { ...d, ranges: d.ranges.map((r) => ({ first: fromInt64(r.first), last: fromInt64(r.last) })) };
}
