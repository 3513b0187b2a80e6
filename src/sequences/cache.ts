/**
 * Sequence definitions as workers read them: from MongoDB, cached briefly (hits and misses). An
 * expired definition is served at once and refreshed in the background, so a request never waits on
 * MongoDB for a sequence it has seen; while MongoDB is down it keeps being served (G3). With
 * `autoCreate`, a name nobody defined becomes a monotonic sequence on first use.
 */
import { performance } from "node:perf_hooks";
import { IddError } from "../core/errors.js";
import { defineSequence, type SequenceDef } from "./definition.js";

/** Where definitions are read from and created in (the MongoDB store): what the cache needs of it, declared here. */
export interface DefinitionSource {
  getSequence(name: string): Promise<SequenceDef | undefined>;
  createSequence(def: SequenceDef): Promise<unknown>;
}

export class SequenceCache {
  readonly #store: DefinitionSource;
  readonly #ttlMs: number;
  readonly #clock: () => number;
  readonly #monotonic: () => number;
  readonly #entries = new Map<string, { def: SequenceDef | undefined; until: number }>();
  readonly #refreshing = new Map<string, Promise<SequenceDef | undefined>>();
  readonly #autoCreate: boolean;
  readonly #creating = new Map<string, Promise<SequenceDef>>();

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
    if (hit.until <= this.#monotonic()) this.#refresh(name).catch(() => {});
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
      this.#refresh(name).catch(() => {}); // stale until MongoDB answers
      return hit.def;
    }
    return this.#refresh(name);
  }

  /** One read per name at a time; concurrent callers share it. */
  #refresh(name: string): Promise<SequenceDef | undefined> {
    let p = this.#refreshing.get(name);
    if (!p) {
      p = this.#store
        .getSequence(name)
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
}
