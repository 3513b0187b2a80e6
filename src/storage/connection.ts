/**
 * The connection to MongoDB that every collection's repository shares: one driver client, the
 * breaker that fails calls fast while MongoDB is unreachable, the round-trip counts, and the mapping
 * of a refused login or an untrusted certificate to one coded error (MONGODB_AUTH_FAILED,
 * MONGODB_TLS_FAILED). Only the repositories of src/storage/ see the driver's collections. The
 * driver's commands on a socket the server closed fail instead of hanging (./closed-socket-guard.ts).
 */
import {
  type AbstractCursor,
  type Collection,
  type Db,
  type Document,
  type IndexSpecification,
  MongoBulkWriteError,
  MongoClient,
  MongoError,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
} from "mongodb";
import { redactUrl } from "../config/secret.js";
import { oneLine, untrustedCertificate } from "../config/untrusted.js";
import { Breaker } from "../core/breaker.js";
import { IddError } from "../core/errors.js";
import { guardClosedSockets } from "./closed-socket-guard.js";
import { mongoConcerns } from "./concerns.js";
import { InFlight, type InFlightStats, type Lane } from "./in-flight.js";

export interface ConnectionOptions {
  /** Absent: the URL's database. */
  dbName?: string;
  serverSelectionTimeoutMS?: number;
  /**
   * How long a call may wait for an answer (default 10 s). Reports over a whole collection raise it:
   * FerretDB answers a sorted query only after reading every matching record.
   */
  socketTimeoutMS?: number;
  /** While MongoDB is unreachable, calls fail fast with UNAVAILABLE and one probes it this often. */
  retryMs?: number;
  onBreaker?: (open: boolean) => void;
  /**
   * How long an operation may wait for one of the pool's connections before it is refused with
   * UNAVAILABLE (./in-flight.ts); a worker gives its step budget. Default 5 s, the driver's own wait.
   */
  maxWaitMs?: number;
  /** Told each time the driver's pool checkout timed out (an operation found no connection within 5 s). */
  onPoolTimeout?: () => void;
}

/** An index a repository needs, created at start (`Store.ensureIndexes`). */
export interface IndexDef {
  collection: string;
  key: IndexSpecification;
  name: string;
  /** Refuses a second document with the same key (MongoDB's duplicate key error, 11000). */
  unique?: boolean;
}

/** MongoDB's duplicate key error. */
const DUPLICATE_KEY = 11000;

/**
 * Inserts `docs` (in order, stopping at the first refused, when `ordered`); returns the indexes of
 * those refused because their key exists; any other failure is thrown. `_id`s are the one key
 * FerretDB enforces atomically, so idd's "first writer wins" records all use them.
 */
export async function insertFirstWins<T extends Document>(
  collection: Collection<T>,
  docs: Parameters<Collection<T>["insertMany"]>[0],
  ordered: boolean,
): Promise<Set<number>> {
  try {
    await collection.insertMany(docs, { ordered });
    return new Set();
  } catch (e) {
    return duplicateIndexes(e);
  }
}

/** The indexes of the documents an insertMany refused because their key exists; any other failure is thrown again. */
function duplicateIndexes(e: unknown): Set<number> {
  if (e instanceof MongoBulkWriteError) {
    const list = Array.isArray(e.writeErrors) ? e.writeErrors : [e.writeErrors];
    if (list.length > 0 && list.every((w) => Number(w.code) === DUPLICATE_KEY)) return new Set(list.map((w) => w.index));
  }
  if (e instanceof MongoServerError && Number(e.code) === DUPLICATE_KEY) return new Set([0]);
  throw e;
}

/** Whether `e` came from MongoDB (its driver), not from Redis or idd: for error messages outside src/storage/. */
export const fromMongoDB = (e: unknown): boolean => e instanceof MongoError;

/** MongoDB could not be reached (as opposed to an error it answered with). */
const isConnectionFailure = (e: unknown) => e instanceof MongoServerSelectionError || e instanceof MongoNetworkError;

/** 18 AuthenticationFailed (wrong user or password), 13 Unauthorized (a login is wanted and none was given). */
const AUTH_CODES = new Set([13, 18]);

export class MongoConnection {
  /** Round trips made, for tests and metrics. */
  readonly stats = { reads: 0, writes: 0 };
  readonly #client: MongoClient;
  readonly #db: Db;
  readonly #breaker: Breaker;
  readonly #inFlight: InFlight;
  #poolTimeouts = 0;
  readonly #url: string;

  constructor(url: string, opts: ConnectionOptions = {}) {
    this.#url = url;
    guardClosedSockets();
    this.#client = new MongoClient(url, {
      useBigInt64: true,
      serverSelectionTimeoutMS: opts.serverSelectionTimeoutMS ?? 5000,
      // After an outage nothing may hang for long: a call that went silent (the server restarted
      // behind its connection) fails within 10 s, a connection is waited for at most 5 s, and the
      // server is polled every 2 s (not streamed), so calls resume soon after MongoDB is back. The
      // chaos suite's MongoDB restart under load saw calls hang for a minute with the driver's defaults.
      socketTimeoutMS: opts.socketTimeoutMS ?? 10_000,
      waitQueueTimeoutMS: 5000,
      // Connections opened at once: the driver's 2 made a cold pool on a slow MongoDB the limit
      // (1,000 new sequences at 600 ms a round trip: 200–330 answered with numbers, against 1,001
      // with 10). The URL's maxConnecting wins.
      ...(!/[?&]maxConnecting=/i.test(url) && { maxConnecting: 10 }),
      heartbeatFrequencyMS: 2000,
      serverMonitoringMode: "poll",
      ...mongoConcerns(url),
    });
    this.#breaker = new Breaker({
      what: "MongoDB",
      retryMs: opts.retryMs ?? 1000,
      isFailure: isConnectionFailure,
      ...(opts.onBreaker && { onChange: opts.onBreaker }),
    });
    this.#db = this.#client.db(opts.dbName);
    this.#client.on("connectionCheckOutFailed", (ev) => {
      if (ev.reason !== "timeout") return;
      this.#poolTimeouts++;
      opts.onPoolTimeout?.();
    });
    // One operation per pooled connection: those ready plus those the pool may be opening at once
    // (maxConnecting, 10), up to maxPoolSize (100; both the URL's or these defaults). The rest wait
    // here, where a step's budget bounds the wait, not in the driver's checkout queue: on a slow
    // MongoDB a cold pool opens its connections a few at a time, and operations beyond them timed out there.
    const { maxPoolSize, maxConnecting } = this.#client.options;
    const ready = new Set<string>();
    const size = () => Math.min(maxPoolSize || Number.POSITIVE_INFINITY, ready.size + maxConnecting);
    this.#inFlight = new InFlight({ limit: size(), maxWaitMs: opts.maxWaitMs ?? 5000, what: "MongoDB" });
    this.#client.on("connectionReady", (ev) => {
      ready.add(`${ev.address}#${ev.connectionId}`);
      this.#inFlight.resize(size());
    });
    this.#client.on("connectionClosed", (ev) => {
      if (ready.delete(`${ev.address}#${ev.connectionId}`)) this.#inFlight.resize(size());
    });
  }

  /** The operations in flight and waiting, those refused for want of a connection, and the driver's pool checkouts that timed out. */
  get load(): Readonly<InFlightStats & { poolTimeouts: number }> {
    return { ...this.#inFlight.stats, poolTimeouts: this.#poolTimeouts };
  }

  /** Whether the last call found MongoDB unreachable (calls fail fast until a probe succeeds). */
  get down(): boolean {
    return this.#breaker.open;
  }

  collection<T extends Document>(name: string): Collection<T> {
    return this.#db.collection<T>(name);
  }

  /**
   * One counted round trip through the breaker and the in-flight bound; a refused login or an
   * untrusted certificate comes out coded. Writes go in the `critical` lane, reads in `normal`, unless
   * `lane` says otherwise (samples: `sheddable`).
   */
  call<T>(kind: "reads" | "writes", fn: () => Promise<T>, lane: Lane = kind === "writes" ? "critical" : "normal"): Promise<T> {
    this.stats[kind]++;
    return this.#breaker
      .run(() => this.#inFlight.run(lane, fn))
      .catch((e: unknown) => {
        throw this.#coded(e);
      });
  }

  /**
   * A cursor's documents, each batch fetched as one read through `call` (the breaker, the in-flight
   * bound); no slot is held between batches, so a slow consumer of the stream holds none. Closed at the end.
   */
  async *stream<T>(cursor: AbstractCursor<T>): AsyncGenerator<T> {
    try {
      for (;;) {
        const doc = cursor.bufferedCount() > 0 ? await cursor.next() : await this.call("reads", () => cursor.next());
        if (doc === null) return;
        yield doc;
      }
    } finally {
      await cursor.close();
    }
  }

  /** Creates the indexes in order (at start: uncounted, past the breaker). */
  async createIndexes(indexes: readonly IndexDef[]): Promise<void> {
    try {
      for (const i of indexes)
        await this.#db.collection(i.collection).createIndex(i.key, { name: i.name, ...(i.unique && { unique: true }) });
    } catch (e) {
      throw this.#coded(e);
    }
  }

  /**
   * MongoDB's own wall clock (`hello`'s `localTime`, the server's): one counted round trip. What
   * the pool's workers compare a stored time with, so no worker's clock judges the others' times.
   */
  async serverTime(): Promise<number> {
    const hello = await this.call("reads", () => this.#db.command({ hello: 1 }));
    const at = hello.localTime;
    if (!(at instanceof Date)) throw new Error("MongoDB's hello gave no localTime");
    return at.getTime();
  }

  /** Whether MongoDB answers (readiness): one round trip, past the breaker and uncounted. */
  async ping(): Promise<void> {
    await this.#db.command({ ping: 1 });
  }

  async close(): Promise<void> {
    await this.#client.close();
  }

  /** A refused login or an untrusted certificate as one coded line (the URL without its password); other errors unchanged. */
  #coded(e: unknown): unknown {
    if (e instanceof MongoError && e.name === "MongoWaitQueueTimeoutError")
      return new IddError("UNAVAILABLE", `MongoDB busy: no pooled connection free in time (${e.message})`, { cause: e });
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
}
