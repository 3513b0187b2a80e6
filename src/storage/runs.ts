/**
 * An append-only collection of runs of consecutive numbers of one counter (`issuance`: numbers
 * answered; `releases`: numbers given up, and why), each document `{sequence, period, first, last,
 * …}`: appended in batches, read back lowest first for `idd audit`.
 */
import type { Collection, Long } from "mongodb";
import type { IndexDef, MongoConnection } from "./connection.js";
import { fromInt64, toInt64 } from "./int64.js";
import { type Window, windowFilter } from "./windows.js";

export interface Run {
  sequence: string;
  period: string | null;
  first: bigint;
  last: bigint;
}

type RunDoc<T extends Run> = Omit<T, "first" | "last"> & { first: bigint | Long; last: bigint | Long };

/** The indexes every run collection needs: a counter's runs by first number, and by time. */
export const runIndexes = (collection: string): IndexDef[] => [
  { collection, key: { sequence: 1, period: 1, first: 1 }, name: "counter_first" },
  { collection, key: { sequence: 1, period: 1, at: 1 }, name: "counter_at" },
];

export class RunCollection<T extends Run> {
  protected readonly connection: MongoConnection;
  protected readonly docs: Collection<RunDoc<T>>;

  constructor(connection: MongoConnection, name: string) {
    this.connection = connection;
    this.docs = connection.collection(name);
  }

  async appendMany(records: T[]): Promise<void> {
    if (records.length === 0) return;
    return this.connection.call("writes", async () => {
      await this.docs.insertMany(
        records.map((r) => ({ ...r, first: toInt64(r.first), last: toInt64(r.last) }) as never),
        { ordered: false },
      );
    });
  }

  /** A counter's runs that reach into `window`, lowest first, streamed. */
  async *inOrder(sequence: string, period: string | null, window: Window = {}): AsyncGenerator<T> {
    const cursor = this.docs
      .find({ sequence, period, ...windowFilter(window) } as never, { projection: { _id: 0 }, batchSize: 10_000 })
      .sort({ first: 1 });
    for await (const d of this.connection.stream(cursor))
      yield { ...d, first: fromInt64(d.first as bigint | Long), last: fromInt64(d.last as bigint | Long) } as unknown as T;
  }
}
