/**
 * The `grants` collection: blocks claimed from Redis, appended in batches (an audit log, and replay's
 * source for `strict` sequences).
 */
import type { Collection } from "mongodb";
import type { IndexDef, MongoConnection } from "./connection.js";
import { fromInt64, toInt64 } from "./int64.js";

export interface Grant {
  sequence: string;
  period: string | null;
  first: bigint;
  last: bigint;
  epoch: number;
  worker: string;
  at: Date;
}

export const GRANT_INDEXES: readonly IndexDef[] = [
  { collection: "grants", key: { sequence: 1, period: 1, last: -1 }, name: "counter_last" },
];

export class GrantRepository {
  readonly #connection: MongoConnection;
  readonly #grants: Collection<Grant>;

  constructor(connection: MongoConnection) {
    this.#connection = connection;
    this.#grants = connection.collection("grants");
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
}
