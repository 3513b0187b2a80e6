/**
 * Sequence definitions as workers read them: from MongoDB, cached briefly (hits and misses). An
 * expired definition is served at once and refreshed in the background, so a request never waits on
 * MongoDB for a sequence it has seen; while MongoDB is down it keeps being served (G3).
 */
import type { Store } from "../storage/store.js";
import type { SequenceDef } from "./definition.js";

export class SequenceCache {
  readonly #store: Store;
  readonly #ttlMs: number;
  readonly #clock: () => number;
  readonly #entries = new Map<string, { def: SequenceDef | undefined; until: number }>();
  readonly #refreshing = new Map<string, Promise<SequenceDef | undefined>>();

  constructor(store: Store, opts: { ttlMs: number; clock: () => number }) {
    this.#store = store;
    this.#ttlMs = opts.ttlMs;
    this.#clock = opts.clock;
  }

  /**
   * The cached definition without waiting: a fresh or stale one (a stale one is refreshed in the
   * background), or undefined when `get` has to ask MongoDB.
   */
  peek(name: string): SequenceDef | undefined {
    const hit = this.#entries.get(name);
    if (!hit?.def) return undefined;
    if (hit.until <= this.#clock()) this.#refresh(name).catch(() => {});
    return hit.def;
  }

  /** Caches a definition this process just created or read. */
  remember(def: SequenceDef): void {
    this.#entries.set(def.name, { def, until: this.#clock() + this.#ttlMs });
  }

  async get(name: string): Promise<SequenceDef | undefined> {
    const now = this.#clock();
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
        .then((def) => {
          // A miss is remembered for a fifth of the time, so a sequence created now is seen soon.
          this.#entries.set(name, { def, until: this.#clock() + (def ? this.#ttlMs : this.#ttlMs / 5) });
          return def;
        })
        .finally(() => this.#refreshing.delete(name));
      this.#refreshing.set(name, p);
    }
    return p;
  }
}
