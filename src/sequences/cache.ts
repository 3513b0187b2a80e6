/**
 * Sequence definitions as workers read them: from MongoDB, cached briefly (hits and misses). While
 * MongoDB is down, a definition read before keeps being served (G3: serve from headroom).
 */
import type { Store } from "../storage/store.js";
import type { SequenceDef } from "./definition.js";

export class SequenceCache {
  readonly #store: Store;
  readonly #ttlMs: number;
  readonly #clock: () => number;
  readonly #entries = new Map<string, { def: SequenceDef | undefined; until: number }>();

  constructor(store: Store, opts: { ttlMs: number; clock: () => number }) {
    this.#store = store;
    this.#ttlMs = opts.ttlMs;
    this.#clock = opts.clock;
  }

  async get(name: string): Promise<SequenceDef | undefined> {
    const now = this.#clock();
    const hit = this.#entries.get(name);
    if (hit && hit.until > now) return hit.def;
    let def: SequenceDef | undefined;
    try {
      def = await this.#store.getSequence(name);
    } catch (e) {
      if (hit?.def) return hit.def;
      throw e;
    }
    // A miss is remembered for a fifth of the time, so a sequence created now is seen soon.
    this.#entries.set(name, { def, until: now + (def ? this.#ttlMs : this.#ttlMs / 5) });
    return def;
  }
}
