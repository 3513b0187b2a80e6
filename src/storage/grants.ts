/**
 * The `grants` collection: blocks claimed from Redis, appended in batches (an audit log, and replay's
 * source for `strict` sequences).
 */
import type { Collection, Long, ObjectId } from "mongodb";
import type { IndexDef, MongoConnection } from "./connection.js";
import { fromInt64, toInt64 } from "./int64.js";
import { type Span, type Window, windowFilter } from "./windows.js";

export interface Grant {
  sequence: string;
  period: string | null;
  first: bigint;
  last: bigint;
  epoch: number;
  worker: string;
  at: Date;
}

/** A grant as read back, with its record's id (the evidence `idd audit` cites). */
export interface LoggedGrant extends Grant {
  id: string;
}

interface GrantDoc extends Omit<Grant, "first" | "last"> {
  _id: ObjectId;
  first: bigint | Long;
  last: bigint | Long;
}

export const GRANT_INDEXES: readonly IndexDef[] = [
  { collection: "grants", key: { sequence: 1, period: 1, last: -1 }, name: "counter_last" },
  { collection: "grants", key: { sequence: 1, period: 1, first: 1 }, name: "counter_first" },
  { collection: "grants", key: { sequence: 1, period: 1, at: 1 }, name: "counter_at" },
];

export class GrantRepository {
  readonly #connection: MongoConnection;
  readonly #grants: Collection<Grant>;
  readonly #docs: Collection<GrantDoc>;

  constructor(connection: MongoConnection) {
    this.#connection = connection;
    this.#grants = connection.collection("grants");
    this.#docs = connection.collection("grants");
  }

  async appendMany(grants: Grant[]): Promise<void> {
    if (grants.length === 0) return;
    return this.#connection.call("writes", async () => {
      await this.#grants.insertMany(
        grants.map((g) => ({ ...g, first: toInt64(g.first), last: toInt64(g.last) }) as unknown as Grant),
        { ordered: false },
      );
    });
  }

  /**
   * Streams the (sequence, period, last) of every grant of `sequences`. Scans the whole collection
   * and filters here: FerretDB evaluates a large `$in` per document, which was 40× slower.
   */
  async *ends(sequences: Set<string>): AsyncGenerator<{ sequence: string; period: string | null; last: bigint }> {
    if (sequences.size === 0) return;
    const cursor = this.#grants.find({}, { projection: { _id: 0, sequence: 1, period: 1, last: 1 }, batchSize: 10_000 });
    for await (const d of cursor) {
      if (sequences.has(d.sequence)) yield { sequence: d.sequence, period: d.period, last: fromInt64(d.last) };
    }
  }

  /** A counter's grants that reach into `window`, lowest first, streamed. */
  async *inOrder(sequence: string, period: string | null, window: Window = {}): AsyncGenerator<LoggedGrant> {
    const cursor = this.#docs.find({ sequence, period, ...windowFilter(window) }, { batchSize: 10_000 }).sort({ first: 1 });
    for await (const { _id, ...d } of cursor) yield { ...d, id: _id.toHexString(), first: fromInt64(d.first), last: fromInt64(d.last) };
  }

  /** The lowest and highest number granted between `from` and `to` (times), when any. */
  async span(sequence: string, period: string | null, from: Date, to: Date): Promise<Span | undefined> {
    return this.#connection.call("reads", async () => {
      const filter = { sequence, period, at: { $gte: from, $lt: to } };
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
