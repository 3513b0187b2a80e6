/**
 * Gapless numbering's two collections (docs/design.md, Gapless numbering). `gapless`: one document
 * per number of a gapless sequence. A number exists iff its document does; the unique index on
 * (sequence, period, number) makes two writers unable to take one number, and ordered inserts of
 * highest+1, highest+2, … make a hole impossible. `gapless_settled`: one document per number
 * confirmed or voided, unique on (sequence, period, number) too: the first CONFIRM or VOID of a
 * number (or the sweep's void) wins and no other can follow, because FerretDB's conditional updates
 * are not atomic (two `updateMany({state: "pending"})` at once both match) while its unique indexes
 * are. The winner then copies the outcome into the number's document, so `gapless` alone shows
 * each number's state; should a worker die between the two writes, the number shows `pending` until
 * the sweep, finding it past its expiry, copies the settlement over. Nothing is ever deleted.
 *
 * `gapless`:
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
 * `gapless_settled`: `sequence`, `period`, `number`, `state` (`confirmed` or `voided`), `reason`
 * (voided: the VOID's, or `expired`), `settledAt`, `settledBy` (the worker).
 */
import { type Collection, type Long, MongoBulkWriteError, MongoServerError, type ObjectId } from "mongodb";
import type { IndexDef, MongoConnection } from "./connection.js";
import { fromInt64, toInt64 } from "./int64.js";

export type GaplessState = "pending" | "confirmed" | "voided";

export interface GaplessNumber {
  sequence: string;
  period: string | null;
  number: bigint;
  requestId: string;
  worker: string;
  issuedAt: Date;
  expiresAt: Date;
}

interface GaplessDoc {
  _id?: ObjectId;
  sequence: string;
  period: string | null;
  number: bigint | Long;
  state: GaplessState;
  requestId: string;
  worker: string;
  issuedAt: Date;
  expiresAt: Date;
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

export type SettledState = "confirmed" | "voided";

/** A document of `gapless_settled`: how one number was settled. */
export interface Settlement {
  sequence: string;
  period: string | null;
  number: bigint;
  state: SettledState;
  reason: string | null;
  settledAt: Date;
  settledBy: string;
}

interface SettlementDoc extends Omit<Settlement, "number"> {
  number: bigint | Long;
}

/** A number of one counter, as the sweep reads it. */
export interface CounterNumber {
  sequence: string;
  period: string | null;
  number: bigint;
}

export const GAPLESS_INDEXES: readonly IndexDef[] = [
  { collection: "gapless", key: { sequence: 1, period: 1, number: 1 }, name: "counter_number", unique: true },
  { collection: "gapless", key: { sequence: 1, requestId: 1 }, name: "sequence_request" },
  { collection: "gapless", key: { state: 1, expiresAt: 1 }, name: "state_expires" },
  { collection: "gapless_settled", key: { sequence: 1, period: 1, number: 1 }, name: "counter_number", unique: true },
];

/** MongoDB's duplicate key error. */
const DUPLICATE_KEY = 11000;

export class GaplessRepository {
  readonly #connection: MongoConnection;
  readonly #numbers: Collection<GaplessDoc>;
  readonly #settled: Collection<SettlementDoc>;

  constructor(connection: MongoConnection) {
    this.#connection = connection;
    this.#numbers = connection.collection("gapless");
    this.#settled = connection.collection("gapless_settled");
  }

  /** The highest number of a counter; undefined before its first. */
  async highest(sequence: string, period: string | null): Promise<bigint | undefined> {
    return this.#connection.call("reads", async () => {
      const d = await this.#numbers.findOne({ sequence, period }, { sort: { number: -1 }, projection: { _id: 0, number: 1 } });
      return d ? fromInt64(d.number) : undefined;
    });
  }

  /**
   * Inserts numbers as pending, in order, stopping at the first that exists already (another writer
   * took it). Returns how many were inserted: all of them, or the ones before the taken number.
   */
  async insert(numbers: GaplessNumber[]): Promise<number> {
    if (numbers.length === 0) return 0;
    return this.#connection.call("writes", async () => {
      try {
        const docs = numbers.map((n) => ({
          ...n,
          number: toInt64(n.number),
          state: "pending" as const,
          settledAt: null,
          settledBy: null,
          reason: null,
        }));
        await this.#numbers.insertMany(docs, { ordered: true });
        return numbers.length;
      } catch (e) {
        if (e instanceof MongoBulkWriteError && Number(e.code) === DUPLICATE_KEY) return e.result.insertedCount;
        if (e instanceof MongoServerError && Number(e.code) === DUPLICATE_KEY) return 0;
        throw e;
      }
    });
  }

  /** The numbers issued to these requestIds of a sequence, lowest first. */
  async ofRequests(sequence: string, requestIds: string[]): Promise<(GaplessNumber & { state: GaplessState })[]> {
    if (requestIds.length === 0) return [];
    return this.#connection.call("reads", async () => {
      const docs = await this.#numbers
        .find({ sequence, requestId: { $in: requestIds } }, { projection: { _id: 0, settledAt: 0, settledBy: 0, reason: 0 } })
        .toArray();
      return docs
        .map((d) => ({ ...d, number: fromInt64(d.number) }))
        .sort((a, b) => (a.number < b.number ? -1 : a.number > b.number ? 1 : 0));
    });
  }

  /** Which of these numbers of a counter were issued. */
  async existing(sequence: string, period: string | null, numbers: bigint[]): Promise<Set<bigint>> {
    return this.#connection.call("reads", async () => {
      const docs = await this.#numbers
        .find({ sequence, period, number: { $in: numbers.map(toInt64) } }, { projection: { _id: 0, number: 1 } })
        .toArray();
      return new Set(docs.map((d) => fromInt64(d.number)));
    });
  }

  /** How these numbers of a counter were settled (absent: not settled). */
  async settlements(sequence: string, period: string | null, numbers: bigint[]): Promise<Map<bigint, Settlement>> {
    if (numbers.length === 0) return new Map();
    return this.#connection.call("reads", async () => {
      const docs = await this.#settled
        .find({ sequence, period, number: { $in: numbers.map(toInt64) } }, { projection: { _id: 0 } })
        .toArray();
      return new Map(docs.map((d) => [fromInt64(d.number), { ...d, number: fromInt64(d.number) }]));
    });
  }

  /**
   * Settles numbers of a counter: a settlement each, the first one winning, then its copy into the
   * numbers' documents. Returns the numbers this call settled (`won`) and those settled before or
   * meanwhile by another call, either way (`taken`).
   */
  async settle(
    c: CounterNumbers,
    to: SettledState,
    reason: string | null,
    at: Date,
    by: string,
  ): Promise<{ won: bigint[]; taken: bigint[] }> {
    if (c.numbers.length === 0) return { won: [], taken: [] };
    const docs = c.numbers.map((n) => ({
      sequence: c.sequence,
      period: c.period,
      number: toInt64(n),
      state: to,
      reason,
      settledAt: at,
      settledBy: by,
    }));
    const taken = await this.#connection.call("writes", async () => {
      try {
        await this.#settled.insertMany(docs, { ordered: false });
        return new Set<number>();
      } catch (e) {
        const errors = e instanceof MongoBulkWriteError ? e.writeErrors : undefined;
        const list = Array.isArray(errors) ? errors : errors ? [errors] : [];
        if (list.length === 0 || list.some((w) => Number(w.code) !== DUPLICATE_KEY)) throw e;
        return new Set(list.map((w) => w.index));
      }
    });
    const won = c.numbers.filter((_, i) => !taken.has(i));
    await this.#copy({ ...c, numbers: won }, { state: to, reason, settledAt: at, settledBy: by });
    return { won, taken: c.numbers.filter((_, i) => taken.has(i)) };
  }

  /** Copies settlements into the numbers' documents (the winner's, or the sweep repairing a copy that was never made). */
  async copy(settlements: Settlement[]): Promise<void> {
    const groups = new Map<string, Settlement[]>();
    for (const s of settlements) {
      const k = JSON.stringify([s.sequence, s.period, s.state, s.reason, s.settledAt.getTime(), s.settledBy]);
      groups.set(k, [...(groups.get(k) ?? []), s]);
    }
    for (const g of groups.values()) {
      const [s] = g as [Settlement];
      await this.#copy({ sequence: s.sequence, period: s.period, numbers: g.map((x) => x.number) }, s);
    }
  }

  async #copy(c: CounterNumbers, s: Pick<Settlement, "state" | "reason" | "settledAt" | "settledBy">): Promise<void> {
    if (c.numbers.length === 0) return;
    await this.#connection.call("writes", () =>
      this.#numbers.updateMany(
        { sequence: c.sequence, period: c.period, number: { $in: c.numbers.map(toInt64) } },
        { $set: { state: s.state, reason: s.reason, settledAt: s.settledAt, settledBy: s.settledBy } },
      ),
    );
  }

  /** Up to `limit` numbers whose document says pending past their expiry. */
  async expired(now: Date, limit: number): Promise<CounterNumber[]> {
    return this.#connection.call("reads", async () => {
      const docs = await this.#numbers
        .find({ state: "pending", expiresAt: { $lt: now } }, { projection: { _id: 0, sequence: 1, period: 1, number: 1 }, limit })
        .toArray();
      return docs.map((d) => ({ sequence: d.sequence, period: d.period, number: fromInt64(d.number) }));
    });
  }

  /** How many numbers each gapless sequence has in each state. */
  async counts(): Promise<{ sequence: string; state: GaplessState; numbers: number }[]> {
    return this.#connection.call("reads", async () => {
      const rows = await this.#numbers
        .aggregate<{ _id: { sequence: string; state: GaplessState }; n: number }>([
          { $group: { _id: { sequence: "$sequence", state: "$state" }, n: { $sum: 1 } } },
        ])
        .toArray();
      return rows.map((r) => ({ sequence: r._id.sequence, state: r._id.state, numbers: Number(r.n) }));
    });
  }
}
