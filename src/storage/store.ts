/**
 * idd's MongoDB, as one object the rest of idd is handed: a façade over the connection
 * (./connection.ts: the driver client, the breaker, error mapping, readiness ping) and one repository
 * per collection:
 * - `sequences`     definitions (./sequences.ts)
 * - `reservations`  append-only raises of each counter's max, written before Redis's (I1) (./reservations.ts)
 * - `grants`        blocks claimed from Redis, appended in batches or before use: audit log, replay source;
 *                   keyed by claim id, with abandoned claim records in place of grants never written (./grants.ts)
 * - `samples`       consumption counts per counter and window; read back for `idd seq show`'s rate, kept IDD_SAMPLE_RETENTION_DAYS (./samples.ts)
 * - `issuance`      the numbers answered for audited sequences, a record per run per batch (./issuance.ts)
 * - `releases`      the numbers of audited sequences a worker gave up unanswered, and why (./releases.ts)
 * - `gapless`       one record per number of a gapless sequence, pending until confirmed or voided (./gapless.ts)
 * - `gapless_counts` one checkpoint per gapless counter, for its counts per state (./gapless-counts.ts)
 * Numbers are stored as int64 and read back as BigInt (./int64.ts). No transactions or change
 * streams (FerretDB). The driver is not handed out: tests read through test/support/mongo-queries.ts.
 */
import type { SequenceDef } from "../sequences/definition.js";
import { type ConnectionOptions, MongoConnection } from "./connection.js";
import {
  type CounterNumber,
  type CounterNumbers,
  GAPLESS_INDEXES,
  type GaplessAnswer,
  type GaplessEntry,
  type GaplessNumber,
  GaplessRepository,
  type SettledState,
  type Settlement,
} from "./gapless.js";
import { type GaplessCount, GaplessCountsRepository } from "./gapless-counts.js";
import { GRANT_INDEXES, type Grant, type GrantOutcome, GrantRepository, type LoggedGrant } from "./grants.js";
import { ISSUANCE_INDEXES, type IssuanceRecord, IssuanceRepository } from "./issuance.js";
import { RELEASE_INDEXES, type Release, ReleaseRepository } from "./releases.js";
import { type LoggedReservation, RESERVATION_INDEXES, type Reservation, ReservationRepository } from "./reservations.js";
import { SAMPLE_INDEXES, type Sample, SampleRepository } from "./samples.js";
import { SequenceRepository } from "./sequences.js";
import { ServerClock } from "./server-clock.js";
import type { Span, Window } from "./windows.js";

/** Definitions per insert of `createSequences`. */
const CREATE_CHUNK = 1000;

export class Store {
  readonly #connection: MongoConnection;
  readonly #sequences: SequenceRepository;
  readonly #reservations: ReservationRepository;
  readonly #grants: GrantRepository;
  readonly #samples: SampleRepository;
  readonly #issuance: IssuanceRepository;
  readonly #releases: ReleaseRepository;
  readonly #gapless: GaplessRepository;
  readonly #gaplessCounts: GaplessCountsRepository;
  readonly #serverClock: ServerClock;

  /** `retryMs`: while MongoDB is unreachable, calls fail fast with UNAVAILABLE and one probes it this often. */
  constructor(url: string, opts: ConnectionOptions = {}) {
    this.#connection = new MongoConnection(url, opts);
    this.#sequences = new SequenceRepository(this.#connection);
    this.#reservations = new ReservationRepository(this.#connection);
    this.#grants = new GrantRepository(this.#connection);
    this.#samples = new SampleRepository(this.#connection);
    this.#issuance = new IssuanceRepository(this.#connection, "issuance");
    this.#releases = new ReleaseRepository(this.#connection, "releases");
    this.#gapless = new GaplessRepository(this.#connection);
    this.#gaplessCounts = new GaplessCountsRepository(
      this.#connection,
      this.#gapless,
      async (name) => (await this.#sequences.get(name))?.start,
    );
    this.#serverClock = new ServerClock(() => this.#connection.serverTime());
  }

  /** Round trips made, for tests and metrics. */
  get stats(): { reads: number; writes: number } {
    return this.#connection.stats;
  }

  /** MongoDB operations in flight and waiting, refused for want of a connection (./in-flight.ts), and pool checkouts timed out. */
  get load(): MongoConnection["load"] {
    return this.#connection.load;
  }

  /** Whether the last call found MongoDB unreachable (calls fail fast until a probe succeeds). */
  get down(): boolean {
    return this.#connection.down;
  }

  async ensureIndexes(): Promise<void> {
    await this.#connection.createIndexes([
      ...RESERVATION_INDEXES,
      ...GRANT_INDEXES,
      ...SAMPLE_INDEXES,
      ...ISSUANCE_INDEXES,
      ...RELEASE_INDEXES,
      ...GAPLESS_INDEXES,
    ]);
  }

  /** Whether MongoDB answers (readiness): one round trip, past the breaker and uncounted. */
  ping(): Promise<void> {
    return this.#connection.ping();
  }

  close(): Promise<void> {
    return this.#connection.close();
  }

  /** Fails with SEQUENCE_EXISTS when one of that name is defined already. */
  createSequence(def: SequenceDef): Promise<void> {
    return this.#sequences.create(def);
  }

  /**
   * Creates many definitions, `CREATE_CHUNK` per round trip, calling `progress` after each; returns
   * the names that were defined already (left as they were).
   */
  async createSequences(defs: readonly SequenceDef[], progress?: (done: number) => void): Promise<string[]> {
    const existing: string[] = [];
    for (let i = 0; i < defs.length; i += CREATE_CHUNK) {
      existing.push(...(await this.#sequences.createMany(defs.slice(i, i + CREATE_CHUNK))));
      progress?.(Math.min(i + CREATE_CHUNK, defs.length));
    }
    return existing;
  }

  updateSequence(def: SequenceDef): Promise<void> {
    return this.#sequences.update(def);
  }

  /** Records a snowflake sequence's first lease: true when this call did, false when it was leased before (./sequences.ts). */
  recordFirstSnowflakeLease(name: string, at = new Date()): Promise<boolean> {
    return this.#sequences.recordFirstLease(name, at);
  }

  getSequence(name: string): Promise<SequenceDef | undefined> {
    return this.#sequences.get(name);
  }

  /** The definitions of those of `names` that exist, by name (one query). */
  getSequences(names: string[]): Promise<Map<string, SequenceDef>> {
    return this.#sequences.getMany(names);
  }

  listSequences(): Promise<SequenceDef[]> {
    return this.#sequences.list();
  }

  /** The reservation in force of a counter (./reservation-in-force.ts); undefined when none. */
  getReservation(sequence: string, period: string | null): Promise<Reservation | undefined> {
    return this.#reservations.inForce(sequence, period);
  }

  /** Whether any counter was ever reserved: false only for a brand-new installation. */
  hasReservations(): Promise<boolean> {
    return this.#reservations.any();
  }

  /** Records a reservation of up to `max` (a raise when higher than the one in force; never a lowering). */
  appendReservation(r: Reservation & { worker: string }): Promise<void> {
    return this.#reservations.append(r);
  }

  /**
   * Records a reservation, then reads the one in force: the caller may use its reservation only when
   * the epoch in force is still its own. MongoDB, the one store with majority writes, is the fence
   * of last resort (I1): a restore appends its epoch before it reads what to restore from, so a
   * reservation whose check saw no newer epoch is visible to every later restore, and one appended
   * under an epoch a restore has superseded is never used (design §5.6, split brain).
   */
  async reserve(r: Reservation & { worker: string }): Promise<Reservation> {
    await this.#reservations.append(r);
    return (await this.#reservations.inForce(r.sequence, r.period)) ?? r;
  }

  /** Records many reservations in one write (replay). */
  appendReservations(rs: (Reservation & { worker: string })[]): Promise<void> {
    return this.#reservations.appendMany(rs);
  }

  /** Streams every reservation record (of `sequences`, when given). */
  reservationRecords(sequences?: string[]): AsyncGenerator<LoggedReservation> {
    return this.#reservations.records(sequences);
  }

  /** Streams the (sequence, period, last) of every grant of `sequences`. */
  grantEnds(sequences: Set<string>): AsyncGenerator<{ sequence: string; period: string | null; last: bigint }> {
    return this.#grants.ends(sequences);
  }

  /** Appends grants (and abandoned claim records); a claim that has a record already keeps it. */
  appendGrants(grants: Grant[]): Promise<void> {
    return this.#grants.appendMany(grants);
  }

  /**
   * Writes a block's grant before use, with the abandoned record of the claim before it when given
   * (./grants.ts): "abandoned" when that claim's own record says it was abandoned (never use it).
   */
  writeGrant(grant: Grant, abandoned?: Grant[]): Promise<GrantOutcome> {
    return this.#grants.writeAhead(grant, abandoned);
  }

  appendSamples(samples: Sample[]): Promise<void> {
    return this.#samples.appendMany(samples);
  }

  /** Deletes every sample of these UTC days ("YYYY-MM-DD"; ./samples.ts); returns how many. */
  deleteSampleDays(days: readonly string[]): Promise<number> {
    return this.#samples.deleteDays(days);
  }

  /** A counter's rate over the samples appended since `since` (./samples.ts), numbers a second; null without any. */
  sampledRate(sequence: string, period: string | null, since: Date, now = new Date()): Promise<number | null> {
    return this.#samples.recentRate(sequence, period, since, now);
  }

  /** A counter's grants that reach into `window`, lowest first, streamed (`idd audit`). */
  grantsInOrder(sequence: string, period: string | null, window?: Window): AsyncGenerator<LoggedGrant> {
    return this.#grants.inOrder(sequence, period, window);
  }

  /** The lowest and highest number granted between two times, when any. */
  grantSpan(sequence: string, period: string | null, from: Date, to: Date): Promise<Span | undefined> {
    return this.#grants.span(sequence, period, from, to);
  }

  /** Records answered numbers of audited sequences. */
  appendIssuance(records: IssuanceRecord[]): Promise<void> {
    return this.#issuance.appendMany(records);
  }

  /** A counter's answered runs that reach into `window`, lowest first, streamed (`idd audit`). */
  issuanceInOrder(sequence: string, period: string | null, window?: Window): AsyncGenerator<IssuanceRecord> {
    return this.#issuance.inOrder(sequence, period, window);
  }

  /** The lowest and highest number answered between two times, when any. */
  issuanceSpan(sequence: string, period: string | null, from: Date, to: Date): Promise<Span | undefined> {
    return this.#issuance.span(sequence, period, from, to);
  }

  /** Records numbers of audited sequences given up unanswered. */
  appendReleases(records: Release[]): Promise<void> {
    return this.#releases.appendMany(records);
  }

  /** A counter's released runs that reach into `window`, lowest first, streamed (`idd audit`). */
  releasesInOrder(sequence: string, period: string | null, window?: Window): AsyncGenerator<Release> {
    return this.#releases.inOrder(sequence, period, window);
  }

  /** Whether a number of a gapless counter was issued (one lookup by `_id`). */
  gaplessExists(sequence: string, period: string | null, number: bigint): Promise<boolean> {
    return this.#gapless.exists(sequence, period, number);
  }

  /** Inserts gapless numbers as pending, in order, up to the first another writer took; returns how many. */
  insertGapless(numbers: GaplessNumber[]): Promise<number> {
    return this.#gapless.insert(numbers);
  }

  /** The gapless answers recorded for these requestIds of a sequence, by requestId. */
  gaplessAnswers(sequence: string, requestIds: string[]): Promise<Map<string, GaplessAnswer>> {
    return this.#gapless.answers(sequence, requestIds);
  }

  /** Records gapless answers; returns the indexes of those whose requestId had one already (it stays). */
  recordGaplessAnswers(answers: GaplessAnswer[]): Promise<Set<number>> {
    return this.#gapless.recordAnswers(answers);
  }

  /** How these numbers of a gapless counter were settled (absent: pending). */
  gaplessSettlements(sequence: string, period: string | null, numbers: bigint[]): Promise<Map<bigint, Settlement>> {
    return this.#gapless.settlements(sequence, period, numbers);
  }

  /** Confirms or voids numbers of a gapless counter, the first settlement of each winning: which this call settled, which were taken. */
  settleGapless(
    c: CounterNumbers,
    to: SettledState,
    reason: string | null,
    at: Date,
    by: string,
  ): Promise<{ won: bigint[]; taken: bigint[] }> {
    return this.#gapless.settle(c, to, reason, at, by);
  }

  /** Copies settlements into their numbers' documents (repairing a copy a worker died before making). */
  copyGaplessSettlements(settlements: Settlement[]): Promise<void> {
    return this.#gapless.copy(settlements);
  }

  /** MongoDB's own wall clock (ms since the epoch), as its server reads it: one round trip. */
  serverTime(): Promise<number> {
    return this.#connection.serverTime();
  }

  /**
   * MongoDB's time now, estimated from a reading carried forward on the monotonic clock
   * (src/storage/server-clock.ts): a round trip the first time and, in the background, once a
   * minute; never behind MongoDB's time, at most a round trip ahead.
   */
  serverNow(): Promise<number> {
    return this.#serverClock.now();
  }

  /** Up to `limit` gapless numbers whose document says pending past their expiry. */
  expiredGapless(now: Date, limit: number): Promise<CounterNumber[]> {
    return this.#gapless.expired(now, limit);
  }

  /** The periods of a gapless sequence that have numbers (`idd audit`). */
  gaplessPeriods(sequence: string): Promise<(string | null)[]> {
    return this.#gapless.periods(sequence);
  }

  /** A gapless counter's numbers with their settled state, lowest first, streamed (`idd audit`). */
  gaplessInOrder(sequence: string, period: string | null): AsyncGenerator<GaplessEntry> {
    return this.#gapless.inOrder(sequence, period);
  }

  /** Registers a gapless counter before its first number is inserted (once per counter and worker; a second is refused). */
  registerGaplessCounter(sequence: string, period: string | null, start: bigint): Promise<void> {
    return this.#gaplessCounts.register(sequence, period, start);
  }

  /** How many numbers each gapless sequence has in each state, from bounded reads (./gapless-counts.ts). */
  gaplessCounts(): Promise<GaplessCount[]> {
    return this.#gaplessCounts.counts();
  }
}
