/**
 * The `samples` collection: consumption counts per counter and window. An audit only: nothing reads
 * them back; block sizes and reservations follow rates each worker measures in memory.
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

  async appendMany(samples: Sample[]): Promise<void> {
    if (samples.length === 0) return;
    return this.#connection.call("writes", async () => {
      await this.#samples.insertMany(samples, { ordered: false });
    });
  }
}
