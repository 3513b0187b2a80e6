/**
 * The `samples` collection: consumption counts per counter and window, appended by every worker each
 * IDD_SAMPLE_MS. Block sizes, reservations and the worker's own forecasts follow rates each worker
 * measures in memory; `idd seq show` reads the recent ones back for a sequence's rate (`recentRate`).
 *
 * Not an audit record: kept IDD_SAMPLE_RETENTION_DAYS (src/issuing/sources/counter/sample-retention.ts). Each
 * sample carries its UTC day (`day`, "YYYY-MM-DD"), and both reads and deletions go by that string
 * equality, which the stack's FerretDB hands SQLite and an index serves: a range on `at` alone would
 * scan every sample ever kept. Samples written before `day` existed are neither read nor deleted.
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

interface SampleDoc extends Sample {
  day: string;
}

export const SAMPLE_INDEXES: readonly IndexDef[] = [
  { collection: "samples", key: { sequence: 1, day: 1, at: -1 }, name: "sequence_day_at" },
  { collection: "samples", key: { day: 1 }, name: "day" },
];

const DAY_MS = 86_400_000;

/** The UTC day of `t` as samples carry it. */
export const sampleDay = (t: Date | number): string => new Date(t).toISOString().slice(0, 10);

/** The UTC days from `from`'s through `to`'s, oldest first. */
export function sampleDays(from: Date | number, to: Date | number): string[] {
  const days: string[] = [];
  for (let t = Math.floor(+from / DAY_MS) * DAY_MS; t <= +to; t += DAY_MS) days.push(sampleDay(t));
  return days;
}

export class SampleRepository {
  readonly #connection: MongoConnection;
  readonly #samples: Collection<SampleDoc>;

  constructor(connection: MongoConnection) {
    this.#connection = connection;
    this.#samples = connection.collection("samples");
  }

  /**
   * A counter's numbers a second over the samples appended since `since` (every worker's: an owner
   * change mid-window is counted once per worker that issued), measured from the earliest window's
   * start; null when there is none. One query per UTC day of the span, each by `sequence_day_at`.
   */
  async recentRate(sequence: string, period: string | null, since: Date, now: Date): Promise<number | null> {
    let issued = 0;
    let from = now.getTime();
    for (const day of sampleDays(since, now)) {
      const found = await this.#connection.call("reads", () =>
        this.#samples.find({ sequence, day, period, at: { $gte: since } }, { projection: { issued: 1, windowMs: 1, at: 1 } }).toArray(),
      );
      for (const x of found) {
        issued += x.issued;
        from = Math.min(from, x.at.getTime() - x.windowMs);
      }
    }
    const ms = now.getTime() - Math.max(from, since.getTime());
    return ms > 0 && from < now.getTime() ? (issued * 1000) / ms : null;
  }

  /** Shed (refused at once, UNAVAILABLE) while MongoDB has no connection free: the sample log keeps them for its next flush. */
  async appendMany(samples: Sample[]): Promise<void> {
    if (samples.length === 0) return;
    return this.#connection.call(
      "writes",
      async () => {
        await this.#samples.insertMany(
          samples.map((s) => ({ ...s, day: sampleDay(s.at) })),
          { ordered: false },
        );
      },
      "sheddable",
    );
  }

  /** Deletes the samples of these UTC days (whole days, one indexed delete each); returns how many. */
  async deleteDays(days: readonly string[]): Promise<number> {
    let deleted = 0;
    for (const day of days)
      deleted += (await this.#connection.call("writes", () => this.#samples.deleteMany({ day }), "normal")).deletedCount;
    return deleted;
  }
}
