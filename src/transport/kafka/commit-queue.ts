/**
 * Offset commits in the background, in order per partition, so that the next fetch need not wait
 * for the round trip. A commit that fails is logged: the partition's next owner reads those records
 * again (idd answers them alike). Closing a consumer waits for the commits in flight.
 */

export interface PartitionOffset {
  topic: string;
  partition: number;
  /** The next offset to read. */
  offset: string;
}

export type CommitFailureLog = (fields: { err: string; key: string; offset: string }, message: string) => void;

export class CommitQueue {
  /** The last commit in flight per topic/partition (each waits for the one before). */
  readonly #last = new Map<string, Promise<void>>();
  readonly #logFailure: CommitFailureLog;

  constructor(logFailure: CommitFailureLog = () => {}) {
    this.#logFailure = logFailure;
  }

  /** Commits `offset` through `commit` once the partition's commits queued before it have finished. */
  add(topic: string, partition: number, offset: string, commit: (offsets: PartitionOffset[]) => Promise<void>): void {
    const key = `${topic}/${partition}`;
    const next = (this.#last.get(key) ?? Promise.resolve())
      .then(() => commit([{ topic, partition, offset }]))
      .catch((e: unknown) => this.#logFailure({ err: (e as Error).message, key, offset }, "committing offsets failed"));
    this.#last.set(key, next);
    void next.then(() => {
      if (this.#last.get(key) === next) this.#last.delete(key);
    });
  }

  /** Resolves when every commit queued so far has finished. */
  async drained(): Promise<void> {
    await Promise.all(this.#last.values());
  }
}
