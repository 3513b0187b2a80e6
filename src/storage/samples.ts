/**
 * The `samples` collection: consumption counts per counter and window, appended by every worker each
 * IDD_SAMPLE_MS. Block sizes, reservations and the worker's own forecasts follow rates each worker
 * measures in memory; `idd seq show` reads the recent ones back for a sequence's rate (`recentRate`).
 */
import type { Collection } from "mongodb";
import type { IndexDef, MongoConnection } from "./connection.js";

export interface Sample {
  sequence: string;
  period: string | null;
  issued: number;
  windowMs: number;
  worker: string;
  at: Date;
}

export const SAMPLE_INDEXES: readonly IndexDef[] = [{ collection: "samples", key: { sequence: 1, at: -1 }, name: "sequence_at" }];

export class SampleRepository {
  readonly #connection: MongoConnection;
  readonly #samples: Collection<Sample>;

  constructor(connection: MongoConnection) {
    this.#connection = connection;
    this.#samples = connection.collection("samples");
  }

  /**
   * A counter's numbers a second over the samples appended since `since` (every worker's: an owner
   * change mid-window is counted once per worker that issued), measured from the earliest window's
   * start; null when there is none. By the `sequence_at` index on MongoDB (FerretDB scans).
   */
  async recentRate(sequence: string, period: string | null, since: Date, now: Date): Promise<number | null> {
    return this.#connection.call("reads", async () => {
      let issued = 0;
      let from = now.getTime();
      for await (const x of this.#samples.find(
        { sequence, period, at: { $gte: since } },
        { projection: { issued: 1, windowMs: 1, at: 1 } },
      )) {
        issued += x.issued;
        from = Math.min(from, x.at.getTime() - x.windowMs);
      }
      const ms = now.getTime() - Math.max(from, since.getTime());
      return ms > 0 && from < now.getTime() ? (issued * 1000) / ms : null;
    });
  }

  /** Shed (refused at once, UNAVAILABLE) while MongoDB has no connection free: the sample log keeps them for its next flush. */
  async appendMany(samples: Sample[]): Promise<void> {
    if (samples.length === 0) return;
    return this.#connection.call(
      "writes",
      async () => {
        await this.#samples.insertMany(samples, { ordered: false });
      },
      "sheddable",
    );
  }
}
