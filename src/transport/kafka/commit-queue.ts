/**
 * Offset commits in the background, in order per partition, so that the next fetch need not wait
 * for the round trip. Offsets are cumulative: while a partition's commit is in flight, the offsets
 * added meanwhile collapse into the latest, committed when it returns (a loaded worker does not
 * queue one commit per step). A commit that fails is logged: the partition's next owner reads those
 * records again (idd answers them alike). Closing a consumer waits for the commits in flight.
 */

export interface PartitionOffset {
  topic: string;
  partition: number;
  /** The next offset to read. */
  offset: string;
}

export type CommitFailureLog = (fields: { err: string; key: string; offset: string }, message: string) => void;

type Commit = (offsets: PartitionOffset[]) => Promise<void>;

interface Lane {
  /** The commit in flight, then the ones after it. */
  running: Promise<void>;
  /** The latest offset added while a commit was in flight, and how to commit it. */
  next: { offset: string; commit: Commit } | undefined;
}

export class CommitQueue {
  /** Per topic/partition, while commits are in flight. */
  readonly #lanes = new Map<string, Lane>();
  readonly #logFailure: CommitFailureLog;

  constructor(logFailure: CommitFailureLog = () => {}) {
    this.#logFailure = logFailure;
  }

  /** Commits `offset` through `commit` once the partition's commit in flight has finished (later offsets replace it). */
  add(topic: string, partition: number, offset: string, commit: Commit): void {
    const key = `${topic}/${partition}`;
    const lane = this.#lanes.get(key);
    if (lane) {
      lane.next = { offset, commit };
      return;
    }
    const fresh: Lane = { running: Promise.resolve(), next: { offset, commit } };
    this.#lanes.set(key, fresh);
    fresh.running = (async () => {
      for (let n = fresh.next; n; n = fresh.next) {
        fresh.next = undefined;
        await n
          .commit([{ topic, partition, offset: n.offset }])
          .catch((e: unknown) => this.#logFailure({ err: (e as Error).message, key, offset: n.offset }, "committing offsets failed"));
      }
      this.#lanes.delete(key);
    })();
  }

  /** Resolves when every commit queued so far has finished. */
  async drained(): Promise<void> {
    await Promise.all([...this.#lanes.values()].map((l) => l.running));
  }
}
