/**
 * Which topics exist and how many partitions each has, from one metadata request for the whole
 * cluster. A snapshot serves for `ttlMs`; a topic or partition it does not know triggers a refresh,
 * at most once per `missRefreshMs`, so a stream of requests naming topics that do not exist costs
 * one metadata request a second, not one per request. Concurrent lookups share one refresh.
 */
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
    this.#missRefreshMs = o.missRefreshMs ?? 1000;
    this.#clock = o.clock ?? Date.now;
  }

  /**
   * Partition counts of `topics` (undefined: no such topic). `partitionOf` names a partition that
   * must exist too, so a topic grown since the snapshot is seen. Throws only when no snapshot was
   * ever had and the brokers cannot be asked.
   */
  async partitions(wanted: Iterable<{ topic: string; partition?: number }>): Promise<Map<string, number | undefined>> {
    const list = [...wanted];
    const age = this.#clock() - this.#at;
    const miss = () =>
      list.some(({ topic, partition }) => {
        const n = this.#snapshot?.get(topic);
        return n === undefined || (partition !== undefined && partition >= n);
      });
    if (age >= this.#ttlMs || (age >= this.#missRefreshMs && miss())) await this.#refresh().catch(() => {});
    if (!this.#snapshot) await this.#refresh();
    const snapshot = this.#snapshot as Map<string, number>;
    return new Map(list.map(({ topic }) => [topic, snapshot.get(topic)]));
  }

  /** The next lookup asks the brokers (a send found a topic gone). */
  invalidate(): void {
    this.#at = Number.NEGATIVE_INFINITY;
  }

  #refresh(): Promise<void> {
    this.#refreshing ??= this.#fetch()
      .then(
        (m) => {
          this.#snapshot = m;
          this.#at = this.#clock();
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
    return this.#refreshing;
  }
}
