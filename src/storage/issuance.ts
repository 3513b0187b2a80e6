/**
 * The `issuance` collection: one record per answered request, written by the built-in history hook
 * (src/hooks/builtin/history.ts) when it is configured.
 */
import type { Collection, Document } from "mongodb";
import type { IndexDef, MongoConnection } from "./connection.js";
import { toInt64 } from "./int64.js";

export interface IssuanceRecord {
  sequence: string;
  period: string | null;
  requestId: string;
  ranges: { first: bigint; last: bigint }[];
  /** The answer's time; a retry answered again is recorded again, `deduped`. */
  at: Date;
  deduped: boolean;
  worker: string;
}

export const ISSUANCE_INDEXES: readonly IndexDef[] = [{ collection: "issuance", key: { sequence: 1, at: 1 }, name: "sequence_at" }];

export class IssuanceRepository {
  readonly #connection: MongoConnection;
  readonly #issuance: Collection<Document>;

  constructor(connection: MongoConnection) {
    this.#connection = connection;
    this.#issuance = connection.collection("issuance");
  }

  /** Appends issuance history records; ranges as 64-bit longs. */
  async appendMany(records: IssuanceRecord[]): Promise<void> {
    if (records.length === 0) return;
    return this.#connection.call("writes", async () => {
      await this.#issuance.insertMany(
        records.map((r) => ({ ...r, ranges: r.ranges.map((x) => ({ first: toInt64(x.first), last: toInt64(x.last) })) })),
        { ordered: false },
      );
    });
  }
}
