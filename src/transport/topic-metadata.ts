/**
 * Which topics exist and how many partitions each has, from one metadata request for the whole
 * cluster. A snapshot serves for `ttlMs`; a topic or partition it does not know triggers a refresh,
 * at most once per `missRefreshMs` (250 ms), so a stream of requests naming topics that do not
 * exist costs a few metadata requests a second, not one per request. Concurrent lookups share one refresh.
 * A broker learns of a topic a moment after its creation was acknowledged (KRaft brokers apply the
 * controller's records as they come: measured here, one all-topics request in 50 right after a
 * create lacked the topic, one in 5 on a loaded machine): a topic is called unknown only when it is
 * still missing `graceMs` after the lookup's `notBefore`, or, on one fresh snapshot, when it was
 * called unknown within the last `rememberMs` (a client that keeps naming a topic that does not
 * exist costs its partition one wait, not one per step).
 * Ages and `notBefore` are on the monotonic clock (`performance.now()`): a wall clock stepped back an
 * hour would otherwise keep a snapshot, and call every topic created since unknown, for the hour.
 */
import { performance } from "node:perf_hooks";

export interface TopicMetadataOptions {
  ttlMs?: number;
  missRefreshMs?: number;
  graceMs?: number;
  rememberMs?: number;
  clock?: () => number;
}

/** At most this many topics remembered unknown (made-up names must not grow the map without end). */
const REMEMBERED = 10_000;

export class TopicMetadata {
  readonly #fetch: () => Promise<Map<string, number>>;
  readonly #ttlMs: number;
  readonly #missRefreshMs: number;
  readonly #graceMs: number;
  readonly #rememberMs: number;
  /** Topics called unknown, and when (on the monotonic clock). */
  readonly #unknown = new Map<string, number>();
  readonly #clock: () => number;
  #snapshot: Map<string, number> | undefined;
  #at = Number.NEGATIVE_INFINITY;
  #refreshing: Promise<void> | undefined;

  constructor(fetch: () => Promise<Map<string, number>>, o: TopicMetadataOptions = {}) {
    this.#fetch = fetch;
    this.#ttlMs = o.ttlMs ?? 30_000;
    this.#missRefreshMs = o.missRefreshMs ?? 250;
    this.#graceMs = o.graceMs ?? 2000;
    this.#rememberMs = o.rememberMs ?? 60_000;
    this.#clock = o.clock ?? (() => performance.now());
  }

  /** The time on this snapshot's clock (monotonic): what a caller's `notBefore` must be read on. */
  now(): number {
    return this.#clock();
  }

  /**
   * Partition counts of `topics` (undefined: no such topic). A wanted `partition` must exist too,
   * so a topic grown since the snapshot is seen. With `notBefore` (on `now()`), a topic or partition
   * the snapshot lacks is only judged on a snapshot requested `graceMs` after that time (just after
   * it, for a topic called unknown within `rememberMs`): a reply topic a client created just before
   * its request is never called unknown. Such a lookup asks again at the rate `missRefreshMs`
   * allows, and ends as soon as the snapshot has what it wants. Throws only when no snapshot was
   * ever had and the brokers cannot be asked.
   */
  async partitions(wanted: Iterable<{ topic: string; partition?: number }>, notBefore?: number): Promise<Map<string, number | undefined>> {
    // Per topic the highest partition wanted (-1: none): a step's thousand replies name a few topics.
    const highest = new Map<string, number>();
    for (const { topic, partition = -1 } of wanted) {
      const h = highest.get(topic);
      if (h === undefined || partition > h) highest.set(topic, partition);
    }
    const missing = () => {
      const out: string[] = [];
      for (const [topic, partition] of highest) {
        const n = this.#snapshot?.get(topic);
        if (n === undefined || partition >= n) out.push(topic);
      }
      return out;
    };
    const age = this.#clock() - this.#at;
    if (age >= this.#ttlMs || (age >= this.#missRefreshMs && missing().length > 0)) await this.#refresh().catch(() => {});
    if (!this.#snapshot) await this.#refresh();
    if (notBefore !== undefined) await this.#judge(notBefore, missing);
    const snapshot = this.#snapshot as Map<string, number>;
    const out = new Map<string, number | undefined>();
    for (const topic of highest.keys()) out.set(topic, snapshot.get(topic));
    return out;
  }

  /** Refreshes until the snapshot has every topic wanted or is new enough to say which are missing. */
  async #judge(notBefore: number, missing: () => string[]): Promise<void> {
    const recent = (topic: string) => (this.#unknown.get(topic) ?? Number.NEGATIVE_INFINITY) > this.#clock() - this.#rememberMs;
    const due = (topics: string[]) => Math.max(...topics.map((t) => notBefore + (recent(t) ? 0 : this.#graceMs)));
    // A refresh that fails leaves `#at` old: the wait ends anyway, with the snapshot it has.
    const deadline = this.#clock() + this.#graceMs + 2 * this.#missRefreshMs;
    for (let topics = missing(); topics.length > 0 && this.#at <= due(topics); topics = missing()) {
      if (this.#clock() >= deadline) return;
      const wait = Math.max(this.#at + this.#missRefreshMs - this.#clock(), 10);
      await new Promise((r) => setTimeout(r, wait));
      await this.#refresh().catch(() => {});
    }
    const topics = missing();
    if (this.#unknown.size + topics.length > REMEMBERED) this.#unknown.clear();
    for (const t of topics) this.#unknown.set(t, this.#at);
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
