/**
 * The `reservations` collection, append-only: each raise of a counter's max — a (sequence, period)'s
 * — is a new record, written before Redis's max is raised (I1). The reservation in force is folded
 * from the records (./reservation-in-force.ts). Appends never lose each other, so this holds without
 * an atomic read-modify-write (FerretDB's findAndModify is not atomic under concurrency).
 */
import type { Collection, Long } from "mongodb";
import type { IndexDef, MongoConnection } from "./connection.js";
import { GroupWrite } from "./group-write.js";
import { fromInt64, toInt64 } from "./int64.js";
import { type InForce, inForce } from "./reservation-in-force.js";

export interface Reservation {
  sequence: string;
  period: string | null;
  max: bigint;
  epoch: number;
}

/** A reservation record as read back, with who wrote it when, and its record's id. */
export interface LoggedReservation extends Reservation {
  at: Date;
  worker: string;
  id: string;
}

interface ReservationDoc {
  sequence: string;
  period: string | null;
  max: bigint | Long;
  epoch: number;
  worker: string;
  at: Date;
}

export const RESERVATION_INDEXES: readonly IndexDef[] = [
  { collection: "reservations", key: { sequence: 1, period: 1, max: -1 }, name: "counter_max" },
  { collection: "reservations", key: { sequence: 1, period: 1, epoch: -1 }, name: "counter_epoch" },
];

export class ReservationRepository {
  readonly #connection: MongoConnection;
  readonly #reservations: Collection<ReservationDoc>;

  /** Reservations appended at once (a step's new counters) go in one insert. */
  readonly #appends: GroupWrite<ReservationDoc, undefined>;

  constructor(connection: MongoConnection) {
    this.#connection = connection;
    this.#reservations = connection.collection("reservations");
    this.#appends = new GroupWrite((docs) =>
      connection.call("writes", async () => {
        await this.#reservations.insertMany(docs, { ordered: false });
        return docs.map(() => undefined);
      }),
    );
  }

  /**
   * The reservation in force of a counter; undefined when none.
   * Folded here rather than read with sort + limit: FerretDB's index-backed sort was seen to miss the
   * newest record under concurrent inserts, and a counter has few records (one per raise).
   */
  async inForce(sequence: string, period: string | null): Promise<Reservation | undefined> {
    return this.#connection.call("reads", async () => {
      const docs = await this.#reservations.find({ sequence, period }, { projection: { _id: 0, max: 1, epoch: 1 } }).toArray();
      const found = docs.reduce<InForce | undefined>((was, d) => inForce(was, { max: fromInt64(d.max), epoch: d.epoch }), undefined);
      return found && { sequence, period, ...found };
    });
  }

  /** Whether any counter was ever reserved: false only for a brand-new installation. */
  async any(): Promise<boolean> {
    return this.#connection.call("reads", async () => (await this.#reservations.findOne({}, { projection: { _id: 1 } })) !== null);
  }

  /** Records a reservation of up to `max` (a raise when higher than the one in force; never a lowering). */
  async append(r: Reservation & { worker: string }): Promise<void> {
    await this.#appends.write({
      sequence: r.sequence,
      period: r.period,
      max: toInt64(r.max),
      epoch: r.epoch,
      worker: r.worker,
      at: new Date(),
    });
  }

  /** Records many reservations in one write (replay). */
  async appendMany(rs: (Reservation & { worker: string })[]): Promise<void> {
    if (rs.length === 0) return;
    return this.#connection.call("writes", async () => {
      const at = new Date();
      await this.#reservations.insertMany(
        rs.map((r) => ({ sequence: r.sequence, period: r.period, max: toInt64(r.max), epoch: r.epoch, worker: r.worker, at })),
        { ordered: false },
      );
    });
  }

  /** Streams every reservation record (of `sequences`, when given). */
  async *records(sequences?: string[]): AsyncGenerator<LoggedReservation> {
    // One sequence as an equality, which an index serves (on the stack's FerretDB too); `$in` is not.
    const filter = !sequences ? {} : sequences.length === 1 ? { sequence: sequences[0] as string } : { sequence: { $in: sequences } };
    const cursor = this.#reservations.find(filter, {
      projection: { _id: 1, sequence: 1, period: 1, max: 1, epoch: 1, at: 1, worker: 1 },
      batchSize: 10_000,
    });
    for await (const d of this.#connection.stream(cursor))
      yield {
        sequence: d.sequence,
        period: d.period,
        max: fromInt64(d.max),
        epoch: d.epoch,
        at: d.at,
        worker: d.worker,
        id: d._id.toHexString(),
      };
  }
}
