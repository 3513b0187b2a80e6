/**
 * Group commit for one kind of write: while one write is in flight, the writes asked for meanwhile
 * wait and then go to MongoDB together, as one `insertMany`. A lone write goes at once, as before;
 * a step that creates a thousand new sequences makes a handful of round trips instead of a thousand.
 * FerretDB on SQLite commits writes one at a time, so this is where its throughput comes from.
 * The order of the inputs is kept; a write that fails as a whole fails every caller in it.
 */
export class GroupWrite<I, O> {
  readonly #write: (inputs: I[]) => Promise<O[]>;
  readonly #max: number;
  readonly #queue: { input: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  #writing = false;

  /** `write` answers one output per input, in their order; at most `max` inputs go in one write. */
  constructor(write: (inputs: I[]) => Promise<O[]>, max = 1000) {
    this.#write = write;
    this.#max = max;
  }

  /** Resolves with this input's output once the write it went in has been answered. */
  write(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#queue.push({ input, resolve, reject });
      if (!this.#writing) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#writing = true;
    try {
      while (this.#queue.length > 0) {
        const group = this.#queue.splice(0, this.#max);
        try {
          const outputs = await this.#write(group.map((g) => g.input));
          for (const [i, g] of group.entries()) g.resolve(outputs[i] as O);
        } catch (e) {
          for (const g of group) g.reject(e);
        }
      }
    } finally {
      this.#writing = false;
    }
  }
}
