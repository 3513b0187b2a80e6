/**
 * The MongoDB seam. Collections:
 * - `sequences`     definitions, _id = name
 * - `reservations`  append-only: each raise of a (sequence, period)'s max is a new record, written
 *                   before Redis's max is raised (I1). The reservation in force is the highest max
 *                   recorded; the fence epoch claims must present is the highest epoch recorded.
 *                   Appends never lose each other, so this holds without atomic read-modify-write
 *                   (FerretDB's findAndModify is not atomic under concurrency).
 * - `grants`        blocks claimed from Redis, appended in batches (audit log, replay source)
 * - `samples`       consumption counts per counter and window (audit only: nothing reads them back;
 *                   block sizes and reservations follow rates each worker measures in memory)
 * - `issuance`      one record per answered request, written by the built-in history hook
 *                   (src/hooks/builtin/history.ts) when it is configured
 * Numbers are stored as int64 and read back as BigInt. No transactions or change streams (FerretDB).
 */
import { type Collection, type Db, Long, MongoClient, MongoNetworkError, MongoServerError, MongoServerSelectionError } from "mongodb";
import { redactUrl } from "../config/secret.js";
import { oneLine, untrustedCertificate } from "../config/untrusted.js";
import { IddError } from "../errors.js";
import type { SequenceDef } from "../sequences/definition.js";
import { Breaker } from "./breaker.js";
import { type InForce, inForce } from "./reservation-in-force.js";

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
  createdAt: Date;
  updatedAt: Date;
}

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

export interface Reservation {
  sequence: string;
  period: string | null;
  max: bigint;
  epoch: number;
}

interface ReservationDoc {
  sequence: string;
  period: string | null;
  max: bigint | Long;
  epoch: number;
  worker: string;
  at: Date;
}

export interface Grant {
  sequence: string;
  period: string | null;
  first: bigint;
  last: bigint;
  epoch: number;
  worker: string;
  at: Date;
}

export interface Sample {
  sequence: string;
  period: string | null;
  issued: number;
  windowMs: number;
  worker: string;
  at: Date;
}

const long = (n: bigint) => Long.fromBigInt(n);
/** MongoDB could not be reached (as opposed to an error it answered with). */
const isConnectionFailure = (e: unknown) => e instanceof MongoServerSelectionError || e instanceof MongoNetworkError;

/** 18 AuthenticationFailed (wrong user or password), 13 Unauthorized (a login is wanted and none was given). */
const AUTH_CODES = new Set([13, 18]);

export class Store {
  readonly client: MongoClient;
  readonly db: Db;
  /** Round trips made, for tests and metrics. */
  readonly stats = { reads: 0, writes: 0 };
  readonly #sequences: Collection<SequenceDoc>;
  readonly #reservations: Collection<ReservationDoc>;
  readonly #grants: Collection<Grant>;
  readonly #samples: Collection<Sample>;
  readonly #breaker: Breaker;
  readonly #url: string;

  /** `retryMs`: while MongoDB is unreachable, calls fail fast with UNAVAILABLE and one probes it this often. */
  constructor(
    url: string,
    opts: { dbName?: string; serverSelectionTimeoutMS?: number; retryMs?: number; onBreaker?: (open: boolean) => void } = {},
  ) {
    this.#url = url;
    this.client = new MongoClient(url, {
      useBigInt64: true,
      serverSelectionTimeoutMS: opts.serverSelectionTimeoutMS ?? 5000,
      // After an outage nothing may hang for long: a call that went silent (the server restarted
      // behind its connection) fails within 10 s, a connection is waited for at most 5 s, and the
      // server is polled every 2 s (not streamed), so calls resume soon after MongoDB is back. The
      // chaos suite's MongoDB restart under load saw calls hang for a minute with the driver's defaults.
      socketTimeoutMS: 10_000,
      waitQueueTimeoutMS: 5000,
      heartbeatFrequencyMS: 2000,
      serverMonitoringMode: "poll",
    });
    this.#breaker = new Breaker({
      what: "MongoDB",
      retryMs: opts.retryMs ?? 1000,
      isFailure: isConnectionFailure,
      ...(opts.onBreaker && { onChange: opts.onBreaker }),
    });
    this.db = this.client.db(opts.dbName);
    this.#sequences = this.db.collection("sequences");
    this.#reservations = this.db.collection("reservations");
    this.#grants = this.db.collection("grants");
    this.#samples = this.db.collection("samples");
  }

  /** Whether the last call found MongoDB unreachable (calls fail fast until a probe succeeds). */
  get down(): boolean {
    return this.#breaker.open;
  }

  #call<T>(kind: "reads" | "writes", fn: () => Promise<T>): Promise<T> {
    this.stats[kind]++;
    return this.#breaker.run(fn).catch((e: unknown) => {
      throw this.#authFailure(e);
    });
  }

  /** A refused login or an untrusted certificate as one coded line (the URL without its password); other errors unchanged. */
  #authFailure(e: unknown): unknown {
    if (untrustedCertificate(e))
      return new IddError(
        "MONGODB_TLS_FAILED",
        `MongoDB at ${redactUrl(this.#url)}: its certificate is not trusted (${oneLine(e)}); give the CA with tlsCAFile in the URL`,
        { cause: e },
      );
    if (!(e instanceof MongoServerError) || !AUTH_CODES.has(Number(e.code))) return e;
    const what = e.code === 18 ? "refused the login" : "wants a login (none in the URL, or not for this database)";
    return new IddError("MONGODB_AUTH_FAILED", `MongoDB at ${redactUrl(this.#url)} ${what}: ${e.message}`, { cause: e });
  }

  async ensureIndexes(): Promise<void> {
    try {
      await this.#reservations.createIndex({ sequence: 1, period: 1, max: -1 }, { name: "counter_max" });
      await this.#reservations.createIndex({ sequence: 1, period: 1, epoch: -1 }, { name: "counter_epoch" });
      await this.#grants.createIndex({ sequence: 1, period: 1, last: -1 }, { name: "counter_last" });
      await this.#samples.createIndex({ sequence: 1, at: -1 }, { name: "sequence_at" });
      await this.db.collection("issuance").createIndex({ sequence: 1, at: 1 }, { name: "sequence_at" });
    } catch (e) {
      throw this.#authFailure(e);
    }
  }

  /** Whether MongoDB answers (readiness): one round trip, past the breaker and uncounted. */
  async ping(): Promise<void> {
    await this.db.command({ ping: 1 });
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  async createSequence(def: SequenceDef): Promise<void> {
    return this.#call("writes", async () => {
      try {
        await this.#sequences.insertOne(toDoc(def));
      } catch (e) {
        if (e instanceof MongoServerError && e.code === 11000)
          throw new IddError("SEQUENCE_EXISTS", `sequence "${def.name}" exists already`);
        throw e;
      }
    });
  }

  async updateSequence(def: SequenceDef): Promise<void> {
    return this.#call("writes", async () => {
      await this.#sequences.replaceOne({ _id: def.name }, toDoc(def));
    });
  }

  async getSequence(name: string): Promise<SequenceDef | undefined> {
    return this.#call("reads", async () => {
      const d = await this.#sequences.findOne({ _id: name });
      return d ? fromDoc(d) : undefined;
    });
  }

  async listSequences(): Promise<SequenceDef[]> {
    return this.#call("reads", async () => (await this.#sequences.find().sort({ _id: 1 }).toArray()).map(fromDoc));
  }

  /**
   * The reservation in force (./reservation-in-force.ts); undefined when none.
   * Computed here rather than with sort + limit: FerretDB's index-backed sort was seen to miss the
   * newest record under concurrent inserts, and a counter has few records (one per raise).
   */
  async getReservation(sequence: string, period: string | null): Promise<Reservation | undefined> {
    return this.#call("reads", async () => {
      const docs = await this.#reservations.find({ sequence, period }, { projection: { _id: 0, max: 1, epoch: 1 } }).toArray();
      const found = docs.reduce<InForce | undefined>(
        (was, d) => inForce(was, { max: BigInt(d.max.toString()), epoch: d.epoch }),
        undefined,
      );
      return found && { sequence, period, ...found };
    });
  }

  /** Whether any counter was ever reserved: false only for a brand-new installation. */
  async hasReservations(): Promise<boolean> {
    return this.#call("reads", async () => (await this.#reservations.findOne({}, { projection: { _id: 1 } })) !== null);
  }

  /** Records a reservation of up to `max` (a raise when higher than the one in force; never a lowering). */
  async appendReservation(r: Reservation & { worker: string }): Promise<void> {
    return this.#call("writes", async () => {
      await this.#reservations.insertOne({
        sequence: r.sequence,
        period: r.period,
        max: long(r.max),
        epoch: r.epoch,
        worker: r.worker,
        at: new Date(),
      });
    });
  }

  /** Records many reservations in one write (replay). */
  async appendReservations(rs: (Reservation & { worker: string })[]): Promise<void> {
    if (rs.length === 0) return;
    return this.#call("writes", async () => {
      const at = new Date();
      await this.#reservations.insertMany(
        rs.map((r) => ({ sequence: r.sequence, period: r.period, max: long(r.max), epoch: r.epoch, worker: r.worker, at })),
        { ordered: false },
      );
    });
  }

  /** Streams every reservation record (of `sequences`, when given). */
  async *reservationRecords(sequences?: string[]): AsyncGenerator<Reservation & { at: Date; worker: string }> {
    const filter = sequences ? { sequence: { $in: sequences } } : {};
    const cursor = this.#reservations.find(filter, {
      projection: { _id: 0, sequence: 1, period: 1, max: 1, epoch: 1, at: 1, worker: 1 },
      batchSize: 10_000,
    });
    for await (const d of cursor)
      yield { sequence: d.sequence, period: d.period, max: BigInt(d.max.toString()), epoch: d.epoch, at: d.at, worker: d.worker };
  }

  /**
   * Streams the (sequence, period, last) of every grant of `sequences`. Scans the whole collection
   * and filters here: FerretDB evaluates a large `$in` per document, which was 40× slower.
   */
  async *grantEnds(sequences: Set<string>): AsyncGenerator<{ sequence: string; period: string | null; last: bigint }> {
    if (sequences.size === 0) return;
    const cursor = this.#grants.find({}, { projection: { _id: 0, sequence: 1, period: 1, last: 1 }, batchSize: 10_000 });
    for await (const d of cursor) {
      if (sequences.has(d.sequence)) yield { sequence: d.sequence, period: d.period, last: BigInt(d.last.toString()) };
    }
  }

  async appendGrants(grants: Grant[]): Promise<void> {
    if (grants.length === 0) return;
    return this.#call("writes", async () => {
      await this.#grants.insertMany(
        grants.map((g) => ({ ...g, first: long(g.first), last: long(g.last) }) as unknown as Grant),
        { ordered: false },
      );
    });
  }

  async appendSamples(samples: Sample[]): Promise<void> {
    if (samples.length === 0) return;
    return this.#call("writes", async () => {
      await this.#samples.insertMany(samples, { ordered: false });
    });
  }

  /** Appends issuance history records (the history hook); ranges as 64-bit longs. */
  async appendIssuance(records: IssuanceRecord[]): Promise<void> {
    if (records.length === 0) return;
    return this.#call("writes", async () => {
      const issuance = this.db.collection("issuance");
      await issuance.insertMany(
        records.map((r) => ({ ...r, ranges: r.ranges.map((x) => ({ first: long(x.first), last: long(x.last) })) })),
        { ordered: false },
      );
    });
  }
}

function toDoc(def: SequenceDef): SequenceDoc {
  const { name, start, maxValue, ...rest } = def;
  return { _id: name, ...rest, start: long(start), maxValue: long(maxValue) };
}

function fromDoc(d: SequenceDoc): SequenceDef {
  // Stored by defineSequence: the settings are those of the document's kind.
  return {
    name: d._id,
    kind: d.kind,
    start: BigInt(d.start.toString()),
    maxValue: BigInt(d.maxValue.toString()),
    timeZone: d.timeZone,
    period: d.period ?? (d.kind === "daily" ? "daily" : "never"),
    format: d.format ?? null,
    overflow: d.overflow ?? "refuse",
    obfuscation: d.obfuscation ?? null,
    snowflake: d.snowflake ?? null,
    grantLog: d.grantLog ?? "relaxed",
    grantLogSince: d.grantLogSince ?? d.createdAt,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  } as SequenceDef;
}
