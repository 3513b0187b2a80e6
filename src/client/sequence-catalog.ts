/**
 * Sequence definitions from a Node service, as `idd seq create` makes them: for a service that
 * makes one sequence per tenant, thousands at a time. Definitions live in idd's MongoDB, so the
 * catalog talks to MongoDB, not to the workers.
 */
import type { SequenceInput } from "../sequences/definition.js";
import { defineSequences, numbered } from "../sequences/sequence-file.js";
import { Store } from "../storage/store.js";

export interface CreateOptions {
  /** Settings every input has unless it sets them itself (e.g. `{ kind: "daily", timeZone: "Asia/Tokyo" }`). */
  defaults?: Partial<SequenceInput>;
  /** Called after each chunk of 1,000 written: how many of `total` are done. */
  progress?: (done: number, total: number) => void;
}

export class SequenceCatalog {
  readonly #store: Store;

  private constructor(store: Store) {
    this.#store = store;
  }

  /** A catalog on idd's MongoDB (the workers' `MONGODB_URL`). */
  static connect(o: { mongodbUrl: string }): SequenceCatalog {
    return new SequenceCatalog(new Store(o.mongodbUrl));
  }

  /**
   * Defines every input not defined yet. All are checked first: one that is not a definition (or a
   * name given twice) rejects with SEQUENCE_INVALID listing each problem, and nothing is created.
   * Names defined already are left as they are and returned in `existing`.
   */
  async create(inputs: readonly SequenceInput[], o: CreateOptions = {}): Promise<{ created: number; existing: string[] }> {
    const defs = defineSequences(numbered(inputs), o.defaults ?? {}, new Date(), "SequenceCatalog.create", "inputs");
    const existing = await this.#store.createSequences(defs, (done) => o.progress?.(done, defs.length));
    return { created: defs.length - existing.length, existing };
  }

  close(): Promise<void> {
    return this.#store.close();
  }
}
