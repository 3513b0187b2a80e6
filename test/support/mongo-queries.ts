/**
 * What tests read from idd's MongoDB and idd itself never does (the grants of a counter, a
 * sequence's issuance history), and the clean-up of a test's database. On a client of its own, on
 * the same URL and database as the test's Store: the Store hands out no driver handle, and these
 * reads do not count in its round trips (`store.stats`) nor pass its breaker.
 */
import { type Collection, type Db, type Document, MongoClient, ObjectId } from "mongodb";
import type { Grant } from "../../src/storage/grants.js";
import type { IssuanceRecord } from "../../src/storage/issuance.js";

/** A document of the `gapless` collection (src/storage/gapless.ts). */
export interface GaplessRow {
  sequence: string;
  period: string | null;
  number: bigint;
  state: "pending" | "confirmed" | "voided";
  requestId: string;
  worker: string;
  issuedAt: Date;
  expiresAt: Date;
  settledAt: Date | null;
  settledBy: string | null;
  reason: string | null;
}

export class MongoQueries {
  readonly #client: MongoClient;
  readonly #db: Db;

  /** `dbName`: as given to the Store (absent: the URL's database). */
  constructor(url: string, dbName?: string) {
    this.#client = new MongoClient(url, { useBigInt64: true });
    this.#db = this.#client.db(dbName);
  }

  /** A counter's grants (and abandoned claim records), lowest first, each with its claim id. */
  async grantsOf(sequence: string, period: string | null): Promise<Grant[]> {
    const docs = await this.#db
      .collection<Omit<Grant, "claim"> & { _id: ObjectId | string }>("grants")
      .find({ sequence, period })
      .sort({ first: 1 })
      .toArray();
    return docs.map(({ _id, ...g }) => ({ ...g, claim: String(_id), first: BigInt(g.first), last: BigInt(g.last) }));
  }

  /** The answered runs recorded for an audited sequence (src/storage/issuance.ts), lowest first. */
  async issuanceOf(sequence: string): Promise<IssuanceRecord[]> {
    const docs = await this.#db
      .collection<IssuanceRecord>("issuance")
      .find({ sequence }, { projection: { _id: 0 } })
      .sort({ first: 1 })
      .toArray();
    return docs.map((d) => ({ ...d, first: BigInt(d.first), last: BigInt(d.last) }));
  }

  /** Deletes one grant record by its id, a claim id or an older record's ObjectId (a test that plants a gap the log cannot explain). */
  async deleteGrant(id: string): Promise<number> {
    const _id = /^[0-9a-f]{24}$/.test(id) ? new ObjectId(id) : id;
    return (await this.#db.collection<{ _id: ObjectId | string }>("grants").deleteOne({ _id })).deletedCount;
  }

  /** Every number of a gapless sequence (all periods), lowest first, as the audit reads them. */
  /** Deletes one number's document of a gapless counter (a planted hole); returns how many went. */
  async deleteGapless(id: string): Promise<number> {
    return (await this.#db.collection<{ _id: string }>("gapless").deleteOne({ _id: id })).deletedCount;
  }

  async gaplessOf(sequence: string): Promise<GaplessRow[]> {
    const docs = await this.#db
      .collection("gapless")
      .find({ sequence }, { projection: { _id: 0 } })
      .toArray();
    return docs
      .map((d) => ({ ...(d as unknown as GaplessRow), number: BigInt(String(d.number)) }))
      .sort((a, b) =>
        (a.period ?? "") < (b.period ?? "")
          ? -1
          : (a.period ?? "") > (b.period ?? "")
            ? 1
            : a.number < b.number
              ? -1
              : a.number > b.number
                ? 1
                : 0,
      );
  }

  /**
   * Each gapless sequence's numbers per state as a `$group` over every number reads them (what the
   * sweep counted before its checkpoints, src/storage/gapless-counts.ts), `sequence/state=n` sorted;
   * only numbers up to `through` of one counter when given.
   */
  async gaplessScanCounts(only?: { sequence: string; period: string | null; through: bigint }): Promise<string[]> {
    const match = only ? [{ $match: { sequence: only.sequence, period: only.period, number: { $lte: only.through } } }] : [];
    const rows = await this.#db
      .collection("gapless")
      .aggregate<{ _id: { sequence: string; state: string }; n: number }>([
        ...match,
        { $group: { _id: { sequence: "$sequence", state: "$state" }, n: { $sum: 1 } } },
      ])
      .toArray();
    return rows.map((r) => `${r._id.sequence}/${r._id.state}=${r.n}`).sort();
  }

  /** The gapless counts' checkpoints (src/storage/gapless-counts.ts), by `_id`. */
  async gaplessCheckpoints(): Promise<
    Map<string, { sequence: string; period: string | null; through: bigint; confirmed: number; voided: number }>
  > {
    const docs = await this.#db
      .collection<{ _id: string; sequence?: string; period: string | null; through: bigint; confirmed: number; voided: number }>(
        "gapless_counts",
      )
      .find({})
      .toArray();
    return new Map(
      docs.flatMap((d) =>
        d.sequence === undefined
          ? []
          : [
              [
                d._id,
                { sequence: d.sequence, period: d.period, through: BigInt(String(d.through)), confirmed: d.confirmed, voided: d.voided },
              ],
            ],
      ),
    );
  }

  /** A collection as the driver sees it, for seeding past the Store (benchmarks). */
  collection<T extends Document>(name: string): Collection<T> {
    return this.#db.collection<T>(name);
  }

  /**
   * How the server would find `collection`'s documents matching `filter` (its explain), and which
   * FerretDB it is (undefined: not FerretDB). FerretDB on SQLite names SQLite's plan: `SCAN` or
   * `SEARCH … USING INDEX`.
   */
  async queryPlan(collection: string, filter: Document): Promise<{ ferretdb: string | undefined; plan: string }> {
    const e = await this.#db.collection(collection).find(filter).explain();
    return { ferretdb: e.serverInfo?.ferretdbVersion as string | undefined, plan: JSON.stringify(e.queryPlanner) };
  }

  /** Drops the test's database and closes this client. */

  async dropDatabase(): Promise<void> {
    try {
      await this.#db.dropDatabase();
    } finally {
      await this.close();
    }
  }

  async close(): Promise<void> {
    await this.#client.close();
  }
}
