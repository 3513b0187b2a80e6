/**
 * Offset commits in the background, in order per partition, so that the next fetch need not wait
 * for the round trip. Offsets are cumulative: while a partition's commit is in flight, and for
 * `intervalMs` from its start, the offsets added meanwhile collapse into the latest, committed then
 * (a loaded worker sends at most one commit per partition per interval, not one per step). The
 * first offset after a quiet spell goes at once. A commit that fails is logged: the partition's next
 * owner reads those records again (idd answers them alike, G5/G6). `flush` ends the waits (a
 * rebalance starting, a consumer closing); closing a consumer waits for the commits in flight.
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
  /** The latest offset added while a commit was in flight or the lane waited, and how to commit it. */
  next: { offset: string; commit: Commit } | undefined;
}

/** A wait that does not keep the process alive (a closed consumer's lanes end by flush). */
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

function flushSignal(): { promise: Promise<void>; resolve(): void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

export class CommitQueue {
  /** Per topic/partition, while commits are in flight. */
  readonly #lanes = new Map<string, Lane>();
  readonly #logFailure: CommitFailureLog;
  readonly #intervalMs: number;
  /** Ends the lanes' current waits (flush); a new one per flush. */
  #flushed = flushSignal();

  constructor(logFailure: CommitFailureLog = () => {}, intervalMs = 0) {
    this.#logFailure = logFailure;
    this.#intervalMs = intervalMs;
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
        const started = performance.now();
        const flushed = this.#flushed.promise; // a flush during the commit ends the wait after it
        await n
          .commit([{ topic, partition, offset: n.offset }])
          .catch((e: unknown) => this.#logFailure({ err: (e as Error).message, key, offset: n.offset }, "committing offsets failed"));
        const left = this.#intervalMs - (performance.now() - started);
        if (left > 0) await Promise.race([sleep(left), flushed]);
      }
      this.#lanes.delete(key);
    })();
  }

  /** Sends every waiting offset now, without waiting for the interval. */
  flush(): void {
    this.#flushed.resolve();
    this.#flushed = flushSignal();
  }

  /** Flushes, then resolves when every commit queued so far has finished. */
  async drained(): Promise<void> {
    this.flush();
    await Promise.all([...this.#lanes.values()].map((l) => l.running));
  }
}
