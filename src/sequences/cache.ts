/**
 * Sequence definitions as workers read them: from MongoDB, cached briefly (hits and misses). An
 * expired definition is served at once and refreshed in the background, so a request never waits on
 * MongoDB for a sequence it has seen; while MongoDB is down it keeps being served (G3). With
 * `autoCreate`, a name nobody defined becomes a monotonic sequence on first use.
 *
 * Refreshes are batched: the cached definitions that expire within a quarter of the TTL (1 s at
 * most) are read again in one query, with every other cached one within half its TTL of expiring
 * (a stale one is served meanwhile, so a change is seen within 1.25 TTLs). So definitions read
 * together expire together, and a worker serving a thousand sequences refreshes them in a few
 * queries per TTL rather than a query per sequence (200 a second across a pool of three at
 * 1,000 sequences and the default 5 s, which cost the workers more CPU than the requests they
 * served, and their p99 latency fourfold). A name not cached is read by its `_id` alone: a batch
 * of them is an `_id: {$in}`, which FerretDB answers by scanning the collection (storage/gapless.ts),
 * and a cold step of a thousand new sequences would scan it once per step; the window bounds the
 * refreshes' scans to a few per TTL.
 */
import { performance } from "node:perf_hooks";
import { IddError } from "../core/errors.js";
import { defineSequence, type SequenceDef } from "./definition.js";

/** Where definitions are read from and created in (the MongoDB store): what the cache needs of it, declared here. */
export interface DefinitionSource {
  getSequence(name: string): Promise<SequenceDef | undefined>;
  /** The definitions of those of `names` that exist, by name. */
  getSequences(names: string[]): Promise<Map<string, SequenceDef>>;
  createSequence(def: SequenceDef): Promise<unknown>;
}

/** How long a change to a definition may go unseen by a worker whose cache keeps definitions `ttlMs`: the TTL and the refreshes' window. */
export const changeSeenWithinMs = (ttlMs: number): number => ttlMs + Math.min(ttlMs / 4, 1000);

/** At most this many names in one query. */
const MAX_BATCH = 500;

type Waiter = { resolve(def: SequenceDef | undefined): void; reject(e: unknown): void };

export class SequenceCache {
  readonly #store: DefinitionSource;
  readonly #ttlMs: number;
  readonly #clock: () => number;
  readonly #monotonic: () => number;
  readonly #entries = new Map<string, { def: SequenceDef | undefined; until: number }>();
  readonly #refreshing = new Map<string, Promise<SequenceDef | undefined>>();
  readonly #autoCreate: boolean;
  readonly #creating = new Map<string, Promise<SequenceDef>>();
  /** Names to read in the next query, with who waits for each; `#flushing`: a query is being assembled or is due. */
  #queued = new Map<string, Waiter>();
  #flushing = false;

  /**
   * `clock`: the wall clock (Unix ms) a created definition is dated by; `monotonic` (default
   * performance.now): what the TTL is measured on, so a wall clock stepped back does not keep a
   * definition cached (a `seq set` unseen) for as long as the step.
   */
  constructor(store: DefinitionSource, opts: { ttlMs: number; clock: () => number; monotonic?: () => number; autoCreate?: boolean }) {
    this.#store = store;
    this.#ttlMs = opts.ttlMs;
    this.#clock = opts.clock;
    this.#monotonic = opts.monotonic ?? (() => performance.now());
    this.#autoCreate = opts.autoCreate ?? false;
  }

  /** The definition, cached or read (or created, with `autoCreate`); UNKNOWN_SEQUENCE when there is none. */
  async require(name: string): Promise<SequenceDef> {
    const def = await this.get(name);
    if (def) return def;
    if (!this.#autoCreate) throw new IddError("UNKNOWN_SEQUENCE", `no sequence named "${name}"`);
    // One creation per name at a time: the requests of a batch for a new sequence share it.
    let creating = this.#creating.get(name);
    if (!creating) {
      creating = (async () => {
        const created = defineSequence({ name }, new Date(this.#clock()));
        const existed = await this.#store.createSequence(created).then(
          () => false,
          (e: unknown) => {
            if (!(e instanceof IddError && e.code === "SEQUENCE_EXISTS")) throw e;
            return true;
          },
        );
        // Defined meanwhile by someone else: theirs is the definition (read back); else ours is.
        const stored = existed ? ((await this.#store.getSequence(name)) ?? created) : created;
        this.remember(stored);
        return stored;
      })().finally(() => this.#creating.delete(name));
      this.#creating.set(name, creating);
    }
    return creating;
  }

  /**
   * The cached definition without waiting: a fresh or stale one (a stale one is refreshed in the
   * background), or undefined when `get` has to ask MongoDB.
   */
  peek(name: string): SequenceDef | undefined {
    const hit = this.#entries.get(name);
    if (!hit?.def) return undefined;
    if (hit.until <= this.#monotonic()) this.#refresh(name, true).catch(() => {});
    return hit.def;
  }

  /** Caches a definition this process just created or read. */
  remember(def: SequenceDef): void {
    this.#entries.set(def.name, { def, until: this.#monotonic() + this.#ttlMs });
  }

  async get(name: string): Promise<SequenceDef | undefined> {
    const now = this.#monotonic();
    const hit = this.#entries.get(name);
    if (hit && hit.until > now) return hit.def;
    if (hit?.def) {
      this.#refresh(name, true).catch(() => {}); // stale until MongoDB answers
      return hit.def;
    }
    return this.#refresh(name);
  }

  /** One read per name at a time; concurrent callers share it. `batched`: a refresh of a cached definition, read with the window's others (#read). */
  #refresh(name: string, batched = false): Promise<SequenceDef | undefined> {
    let p = this.#refreshing.get(name);
    if (!p) {
      p = (batched ? this.#read(name) : this.#store.getSequence(name))
        .then((read) => {
          // A read that began before a newer definition was remembered (an update made here) does
          // not put the older one back.
          const held = this.#entries.get(name)?.def;
          const def = held && read && held.updatedAt > read.updatedAt ? held : read;
          // A miss is remembered for a fifth of the time, so a sequence created now is seen soon.
          this.#entries.set(name, { def, until: this.#monotonic() + (def ? this.#ttlMs : this.#ttlMs / 5) });
          return def;
        })
        .finally(() => this.#refreshing.delete(name));
      this.#refreshing.set(name, p);
    }
    return p;
  }

  /** `name`'s definition from the next batched query (queued; the query goes out a quarter of the TTL, at most 1 s, after the first queued). */
  #read(name: string): Promise<SequenceDef | undefined> {
    return new Promise((resolve, reject) => {
      this.#queued.set(name, { resolve, reject });
      if (this.#flushing) return;
      this.#flushing = true;
      setTimeout(() => this.#flush(), changeSeenWithinMs(this.#ttlMs) - this.#ttlMs).unref();
    });
  }

  /** Sends the queued refreshes, with the cached definitions due within half their TTL, in queries of at most MAX_BATCH names. */
  #flush(): void {
    const due = this.#monotonic() + this.#ttlMs / 2;
    for (const [name, e] of this.#entries)
      if (e.def && e.until <= due && !this.#refreshing.has(name) && !this.#queued.has(name)) this.#refresh(name, true).catch(() => {});
    const queued = [...this.#queued];
    this.#queued = new Map();
    this.#flushing = false;
    for (let i = 0; i < queued.length; i += MAX_BATCH) {
      const part = queued.slice(i, i + MAX_BATCH);
      this.#store.getSequences(part.map(([name]) => name)).then(
        (found) => {
          for (const [name, w] of part) w.resolve(found.get(name));
        },
        (e: unknown) => {
          for (const [, w] of part) w.reject(e);
        },
      );
    }
  }
}
