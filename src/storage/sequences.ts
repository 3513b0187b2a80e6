/** The `sequences` collection: one document per sequence definition, `_id` = its name. */
import type { Collection, Long } from "mongodb";
import { IddError } from "../core/errors.js";
import type { SequenceDef } from "../sequences/definition.js";
import { insertFirstWins, type MongoConnection } from "./connection.js";
import { GroupWrite } from "./group-write.js";
import { fromInt64, toInt64 } from "./int64.js";

interface SequenceDoc {
  _id: string;
  kind: SequenceDef["kind"];
  start: bigint | Long;
  maxValue: bigint | Long;
  timeZone: string | null;
  /** Absent in definitions written before periods were a setting: derived from the kind. */
  period?: SequenceDef["period"];
  format?: string | null;
  /** Absent before formatted sequences: refuse. */
  overflow?: SequenceDef["overflow"];
  obfuscation?: SequenceDef["obfuscation"];
  snowflake?: SequenceDef["snowflake"];
  grantLog?: SequenceDef["grantLog"];
  grantLogSince?: Date;
  /** Absent before audits: off. */
  audit?: boolean;
  auditSince?: Date | null;
  /** Absent before gapless sequences: null. */
  gapless?: SequenceDef["gapless"];
  /**
   * Snowflake sequences: when a worker first leased a worker id of it (design §5.6), written before
   * that lease. null: never leased. Absent (created by a release before it): may have been leased.
   */
  snowflakeLeasedAt?: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export class SequenceRepository {
  readonly #connection: MongoConnection;
  readonly #sequences: Collection<SequenceDoc>;
  /** Definitions created at once (a step's new sequences, with IDD_AUTO_CREATE_SEQUENCES) go in one insert: whether each existed. */
  readonly #creates: GroupWrite<SequenceDef, boolean>;

  constructor(connection: MongoConnection) {
    this.#connection = connection;
    this.#sequences = connection.collection("sequences");
    this.#creates = new GroupWrite((defs) =>
      connection.call("writes", async () => {
        const existed = await insertFirstWins(this.#sequences, defs.map(newDoc), false);
        return defs.map((_, i) => existed.has(i));
      }),
    );
  }

  /** Fails with SEQUENCE_EXISTS when one of that name is defined already. */
  async create(def: SequenceDef): Promise<void> {
    if (await this.#creates.write(def)) throw new IddError("SEQUENCE_EXISTS", `sequence "${def.name}" exists already`);
  }

  /**
   * Creates every definition not defined yet, in one unordered insert (MongoDB goes on past a name
   * that exists); returns the names that existed already, left as they were.
   */
  async createMany(defs: readonly SequenceDef[]): Promise<string[]> {
    return this.#connection.call("writes", async () => {
      const existed = await insertFirstWins(this.#sequences, defs.map(newDoc), false);
      return defs.filter((_, i) => existed.has(i)).map((d) => d.name);
    });
  }

  /** Sets every setting of the definition; keeps what is not one (snowflakeLeasedAt). */
  async update(def: SequenceDef): Promise<void> {
    return this.#connection.call("writes", async () => {
      const { _id, ...settings } = toDoc(def);
      await this.#sequences.updateOne({ _id }, { $set: settings });
    });
  }

  /**
   * Records that a worker is about to lease a worker id of the snowflake sequence `name` for the
   * first time: true when this call recorded it (no lease of it was ever granted before), false when
   * one was (or it was created by a release that did not record leases).
   */
  async recordFirstLease(name: string, at: Date): Promise<boolean> {
    return this.#connection.call("writes", async () => {
      const first = { _id: name, snowflakeLeasedAt: { $exists: true, $eq: null } };
      return (await this.#sequences.updateOne(first, { $set: { snowflakeLeasedAt: at } })).modifiedCount === 1;
    });
  }

  async get(name: string): Promise<SequenceDef | undefined> {
    return this.#connection.call("reads", async () => {
      const d = await this.#sequences.findOne({ _id: name });
      return d ? fromDoc(d) : undefined;
    });
  }

  /** The definitions of those of `names` that exist, by name: one query. */
  async getMany(names: string[]): Promise<Map<string, SequenceDef>> {
    return this.#connection.call("reads", async () => {
      const docs = await this.#sequences.find({ _id: { $in: names } }).toArray();
      return new Map(docs.map((d) => [d._id, fromDoc(d)]));
    });
  }

  /** Every definition, by name. */
  async list(): Promise<SequenceDef[]> {
    return this.#connection.call("reads", async () => (await this.#sequences.find().sort({ _id: 1 }).toArray()).map(fromDoc));
  }
}

function toDoc(def: SequenceDef): SequenceDoc {
  const { name, start, maxValue, ...rest } = def;
  return { _id: name, ...rest, start: toInt64(start), maxValue: toInt64(maxValue) };
}

/** A new definition's document: a snowflake sequence starts never leased. */
function newDoc(def: SequenceDef): SequenceDoc {
  return { ...toDoc(def), ...(def.kind === "snowflake" && { snowflakeLeasedAt: null }) };
}

function fromDoc(d: SequenceDoc): SequenceDef {
  // Stored by defineSequence: the settings are those of the document's kind.
  return {
    name: d._id,
    kind: d.kind,
    start: fromInt64(d.start),
    maxValue: fromInt64(d.maxValue),
    timeZone: d.timeZone,
    period: d.period ?? (d.kind === "daily" ? "daily" : "never"),
    format: d.format ?? null,
    overflow: d.overflow ?? "refuse",
    obfuscation: d.obfuscation ?? null,
    snowflake: d.snowflake ?? null,
    grantLog: d.grantLog ?? "relaxed",
    grantLogSince: d.grantLogSince ?? d.createdAt,
    audit: d.audit ?? false,
    auditSince: d.auditSince ?? null,
    gapless: d.gapless ?? null,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  } as SequenceDef;
}
