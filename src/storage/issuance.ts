/**
 * The `issuance` collection: the numbers answered for sequences that ask for an audit (definition
 * `audit`), written by the dispenser once per batch before the replies go out
 * (src/issuing/issuance-trail.ts): one record per run of consecutive numbers of one counter. With
 * the strict grant log such sequences keep, every number is then either answered (here) or given up
 * (a grant), which is what `idd audit` walks (src/audit/).
 */
import type { Collection, Long } from "mongodb";
import type { IndexDef, MongoConnection } from "./connection.js";
import { fromInt64, toInt64 } from "./int64.js";
import { type Span, type Window, windowFilter } from "./windows.js";

export interface IssuanceRecord {
  sequence: string;
  period: string | null;
  first: bigint;
  last: bigint;
  /** When the batch was answered. */
  at: Date;
  worker: string;
}

interface IssuanceDoc extends Omit<IssuanceRecord, "first" | "last"> {
  first: bigint | Long;
  last: bigint | Long;
}

export const ISSUANCE_INDEXES: readonly IndexDef[] = [
  { collection: "issuance", key: { sequence: 1, period: 1, first: 1 }, name: "counter_first" },
  { collection: "issuance", key: { sequence: 1, period: 1, at: 1 }, name: "counter_at" },
];

export class IssuanceRepository {
  readonly #connection: MongoConnection;
  readonly #issuance: Collection<IssuanceDoc>;

  constructor(connection: MongoConnection) {
    this.#connection = connection;
    this.#issuance = connection.collection("issuance");
  }

  async appendMany(records: IssuanceRecord[]): Promise<void> {
    if (records.length === 0) return;
    return this.#connection.call("writes", async () => {
      await this.#issuance.insertMany(
        records.map((r) => ({ ...r, first: toInt64(r.first), last: toInt64(r.last) })),
        { ordered: false },
      );
    });
  }

  /** A counter's answered runs that reach into `window`, lowest first, streamed. */
  async *inOrder(sequence: string, period: string | null, window: Window = {}): AsyncGenerator<IssuanceRecord> {
    const cursor = this.#issuance
      .find({ sequence, period, ...windowFilter(window) }, { projection: { _id: 0 }, batchSize: 10_000 })
      .sort({ first: 1 });
    for await (const d of cursor) yield { ...d, first: fromInt64(d.first), last: fromInt64(d.last) };
  }

  /** The lowest and highest number answered between `from` and `to` (times), when any. */
  async span(sequence: string, period: string | null, from: Date, to: Date): Promise<Span | undefined> {
    return this.#connection.call("reads", async () => {
      const filter = { sequence, period, at: { $gte: from, $lt: to } };
      const [lo] = await this.#issuance
        .find(filter, { projection: { first: 1 } })
        .sort({ first: 1 })
        .limit(1)
        .toArray();
      const [hi] = await this.#issuance
        .find(filter, { projection: { last: 1 } })
        .sort({ last: -1 })
        .limit(1)
        .toArray();
      return lo && hi ? { first: fromInt64(lo.first), last: fromInt64(hi.last) } : undefined;
    });
  }
}
