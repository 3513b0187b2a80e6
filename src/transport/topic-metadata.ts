/**
 * Which topics exist and how many partitions each has, from one metadata request for the whole
 * cluster. A snapshot serves for `ttlMs`; a topic or partition it does not know triggers a refresh,
 * at most once per `missRefreshMs` (250 ms), so a stream of requests naming topics that do not
 * exist costs a few metadata requests a second, not one per request. Concurrent lookups share one refresh.
 * Ages and `notBefore` are on the monotonic clock (`performance.now()`): a wall clock stepped back an
 * hour would otherwise keep a snapshot, and call every topic created since unknown, for the hour.
 */
import { performance } from "node:perf_hooks";

export interface TopicMetadataOptions {
  ttlMs?: number;
  missRefreshMs?: number;
  clock?: () => number;
}

export class TopicMetadata {
  readonly #fetch: () => Promise<Map<string, number>>;
  readonly #ttlMs: number;
  readonly #missRefreshMs: number;
  readonly #clock: () => number;
  #snapshot: Map<string, number> | undefined;
  #at = Number.NEGATIVE_INFINITY;
  #refreshing: Promise<void> | undefined;

  constructor(fetch: () => Promise<Map<string, number>>, o: TopicMetadataOptions = {}) {
    this.#fetch = fetch;
    this.#ttlMs = o.ttlMs ?? 30_000;
    this.#missRefreshMs = o.missRefreshMs ?? 250;
    this.#clock = o.clock ?? (() => performance.now());
  }

  /** The time on this snapshot's clock (monotonic): what a caller's `notBefore` must be read on. */
  now(): number {
    return this.#clock();
  }

  /**
   * Partition counts of `topics` (undefined: no such topic). A wanted `partition` must exist too,
   * so a topic grown since the snapshot is seen. With `notBefore`, a topic or partition the
   * snapshot lacks is only judged on a snapshot requested after that time (on `now()`): a reply topic a
   * client created just before its request is never called unknown. Such a lookup waits for the
   * next refresh the rate allows (at most `missRefreshMs`). Throws only when no snapshot was ever
   * had and the brokers cannot be asked.
   */
  async partitions(wanted: Iterable<{ topic: string; partition?: number }>, notBefore?: number): Promise<Map<string, number | undefined>> {
    // Per topic the highest partition wanted (-1: none): a step's thousand replies name a few topics.
    const highest = new Map<string, number>();
    for (const { topic, partition = -1 } of wanted) {
      const h = highest.get(topic);
      if (h === undefined || partition > h) highest.set(topic, partition);
    }
    const miss = () => {
      for (const [topic, partition] of highest) {
        const n = this.#snapshot?.get(topic);
        if (n === undefined || partition >= n) return true;
      }
      return false;
    };
    const age = this.#clock() - this.#at;
    if (age >= this.#ttlMs || (age >= this.#missRefreshMs && miss())) await this.#refresh().catch(() => {});
    if (!this.#snapshot) await this.#refresh();
    for (let round = 0; notBefore !== undefined && round < 3 && this.#at <= notBefore && miss(); round++) {
      const wait = this.#at + this.#missRefreshMs - this.#clock();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      await this.#refresh().catch(() => {});
    }
    const snapshot = this.#snapshot as Map<string, number>;
    const out = new Map<string, number | undefined>();
    for (const topic of highest.keys()) out.set(topic, snapshot.get(topic));
    return out;
  }

  /** The next lookup asks the brokers (a send found a topic gone). */
  invalidate(): void {
    this.#at = Number.NEGATIVE_INFINITY;
  }

  /** One metadata request at a time; the snapshot is dated when it was asked for, not answered. */
  #refresh(): Promise<void> {
    if (!this.#refreshing) {
      const asked = this.#clock();
      this.#refreshing = this.#fetch()
        .then(
          (m) => {
            this.#snapshot = m;
            this.#at = asked;
          },
          (e: unknown) => {
            // Brokers unreachable: keep serving the old snapshot, and ask again in a while, not at once.
            if (this.#snapshot) this.#at = Math.max(this.#at, this.#clock() - this.#ttlMs + this.#missRefreshMs);
            throw e;
          },
        )
        .finally(() => {
          this.#refreshing = undefined;
        });
    }
    return this.#refreshing;
  }
}
