/**
 * The `grants` collection: blocks claimed from Redis, appended in batches (an audit log, and replay's
 * source for `strict` sequences), or one at a time before use (strict).
 *
 * A grant's `_id` is its claim id (documents written before claim ids were keys have an ObjectId),
 * so a claim has one record at most: its grant, or, when its claimant never wrote the grant, an
 * abandoned claim record the counter's next claimer wrote in its place (`abandoned` set; design G4).
 * Whichever is inserted first stands; the other is refused by the `_id` and changes nothing.
 */
import type { Collection, Long, ObjectId } from "mongodb";
import { type IndexDef, insertFirstWins, type MongoConnection } from "./connection.js";
import { fromInt64, toInt64 } from "./int64.js";
import { type Span, type Window, windowFilter } from "./windows.js";

export interface Grant {
  /** The claim id: the record's `_id`. */
  claim: string;
  sequence: string;
  period: string | null;
  first: bigint;
  last: bigint;
  epoch: number;
  /** The worker that claimed the block. */
  worker: string;
  /** When it was claimed (an abandoned claim: by its claimant's clock, as Redis kept it). */
  at: Date;
  /** Set on an abandoned claim record: none of the block was issued. */
  abandoned?: Abandonment;
}

/** Who recorded a claim as abandoned, and when; `gen` is the claimant's. */
export interface Abandonment {
  gen: number;
  by: string;
  at: Date;
}

/** A grant as read back, with its record's id (the evidence `idd audit` cites). */
export interface LoggedGrant extends Omit<Grant, "claim"> {
  id: string;
}

interface GrantDoc extends Omit<Grant, "claim" | "first" | "last"> {
  _id: ObjectId | string;
  first: bigint | Long;
  last: bigint | Long;
}

/** How a write-ahead grant fared: written (now or by an earlier try of the same claim), or its claim was recorded as abandoned first. */
export type GrantOutcome = "written" | "abandoned";

export const GRANT_INDEXES: readonly IndexDef[] = [
  { collection: "grants", key: { sequence: 1, period: 1, last: -1 }, name: "counter_last" },
  { collection: "grants", key: { sequence: 1, period: 1, first: 1 }, name: "counter_first" },
  { collection: "grants", key: { sequence: 1, period: 1, at: 1 }, name: "counter_at" },
];

const docOf = ({ claim, ...g }: Grant): GrantDoc => ({ _id: claim, ...g, first: toInt64(g.first), last: toInt64(g.last) });

export class GrantRepository {
  readonly #connection: MongoConnection;
  readonly #docs: Collection<GrantDoc>;

  constructor(connection: MongoConnection) {
    this.#connection = connection;
    this.#docs = connection.collection("grants");
  }

  /**
   * Appends records whose claims may have one already (the batched log tries again after a failure
   * that may have written them; an abandoned claim record meets its grant): those are left as they are.
   */
  async appendMany(grants: Grant[]): Promise<void> {
    if (grants.length === 0) return;
    await this.#insert(grants);
  }

  /**
   * Writes a grant before its block is used, with the abandoned records of earlier claims when given,
   * in one insert. The grant refused means its claim has a record already: the grant itself (an
   * earlier try that failed late), or an abandoned claim record (the block must not be used), which
   * one `_id` lookup tells.
   */
  async writeAhead(grant: Grant, abandoned: Grant[] = []): Promise<GrantOutcome> {
    const refused = await this.#insert([grant, ...abandoned]);
    if (!refused.has(0)) return "written";
    const found = await this.#connection.call("reads", () => this.#docs.findOne({ _id: grant.claim }, { projection: { abandoned: 1 } }));
    return found?.abandoned ? "abandoned" : "written";
  }

  /** Inserts records; returns the indexes of those refused because their claim has a record. */
  #insert(grants: Grant[]): Promise<Set<number>> {
    return this.#connection.call("writes", () => insertFirstWins(this.#docs, grants.map(docOf), false));
  }

  /**
   * Streams the (sequence, period, last) of every grant of `sequences`. One sequence (a worker's
   * restore) is read by its index; many (replay) by scanning the whole collection and filtering
   * here: FerretDB evaluates a large `$in` per document, which was 40× slower.
   */
  async *ends(sequences: Set<string>): AsyncGenerator<{ sequence: string; period: string | null; last: bigint }> {
    if (sequences.size === 0) return;
    const [only] = sequences;
    const filter = sequences.size === 1 ? { sequence: only as string } : {};
    const cursor = this.#docs.find(filter, { projection: { _id: 0, sequence: 1, period: 1, last: 1 }, batchSize: 10_000 });
    for await (const d of this.#connection.stream(cursor)) {
      if (sequences.has(d.sequence)) yield { sequence: d.sequence, period: d.period, last: fromInt64(d.last) };
    }
  }

  /** A counter's grants that reach into `window`, lowest first, streamed. */
  async *inOrder(sequence: string, period: string | null, window: Window = {}): AsyncGenerator<LoggedGrant> {
    const cursor = this.#docs.find({ sequence, period, ...windowFilter(window) }, { batchSize: 10_000 }).sort({ first: 1 });
    for await (const { _id, ...d } of this.#connection.stream(cursor))
      yield { ...d, id: typeof _id === "string" ? _id : _id.toHexString(), first: fromInt64(d.first), last: fromInt64(d.last) };
  }

  /** The lowest and highest number granted between `from` and `to` (times), when any. */
  async span(sequence: string, period: string | null, from: Date, to: Date): Promise<Span | undefined> {
    return this.#connection.call("reads", async () => {
      const filter = { sequence, period, at: { $gte: from, $lt: to }, abandoned: { $exists: false } };
      const [lo] = await this.#docs
        .find(filter, { projection: { first: 1 } })
        .sort({ first: 1 })
        .limit(1)
        .toArray();
      const [hi] = await this.#docs
        .find(filter, { projection: { last: 1 } })
        .sort({ last: -1 })
        .limit(1)
        .toArray();
      return lo && hi ? { first: fromInt64(lo.first), last: fromInt64(hi.last) } : undefined;
    });
  }
}
