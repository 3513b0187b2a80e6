/**
 * Retention of the `samples` collection (src/storage/samples.ts): consumption samples are not an
 * audit record, and every worker appends one per counter that issued each IDD_SAMPLE_MS (8,640 a
 * day for one busy counter), so they would grow without end. Every hour the worker that owns request
 * partition 0 (as for the gapless sweep) deletes the UTC days older than IDD_SAMPLE_RETENTION_DAYS
 * whole, one indexed delete per day: the first run of a process looks back a year, later runs only
 * at the days that aged out since. The audit collections (grants, reservations, issuance, releases,
 * gapless) are never pruned.
 */
import type { Logger } from "pino";
import { sampleDays } from "../storage/samples.js";
import type { Store } from "../storage/store.js";

const DAY_MS = 86_400_000;
/** Days a process's first run looks back past the retention (a pool stopped longer leaves older days). */
const FIRST_LOOKBACK_DAYS = 366;

export interface SampleRetentionDeps {
  store: Pick<Store, "deleteSampleDays">;
  retentionDays: number;
  everyMs?: number;
  clock: () => number;
  logger: Logger;
}

export class SampleRetention {
  readonly #d: SampleRetentionDeps;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  /** Whether this worker prunes for the pool (it owns request partition 0): told by the assignment. */
  #leading = false;
  /** The newest day deleted (or found empty) so far: later runs start after it. */
  #prunedThrough: string | undefined;

  constructor(deps: SampleRetentionDeps) {
    this.#d = deps;
    this.#log = deps.logger.child({ component: "samples" });
  }

  start(): void {
    this.#timer = setInterval(() => void this.run(), this.#d.everyMs ?? 3_600_000);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running;
  }

  /** Whether this worker prunes for the pool from now on (it owns request partition 0); one that starts prunes at once. */
  lead(leading: boolean): void {
    if (leading === this.#leading) return;
    this.#leading = leading;
    if (leading) void this.run();
  }

  /** The UTC days this run deletes: those wholly older than the retention, not deleted before. */
  days(now = this.#d.clock()): string[] {
    const last = now - this.#d.retentionDays * DAY_MS - DAY_MS; // the newest day wholly out of retention
    const from = this.#prunedThrough ? Date.parse(this.#prunedThrough) + DAY_MS : last - FIRST_LOOKBACK_DAYS * DAY_MS;
    return from > last ? [] : sampleDays(from, last);
  }

  /** One pass (not two at once), when this worker leads; a failure is logged and tried again next time. */
  run(): Promise<void> {
    if (!this.#leading) return Promise.resolve();
    this.#running ??= this.#prune()
      .catch((e: unknown) => this.#log.warn({ err: (e as Error).message }, "deleting old samples failed; trying again later"))
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }

  async #prune(): Promise<void> {
    const days = this.days();
    if (days.length === 0) return;
    const deleted = await this.#d.store.deleteSampleDays(days);
    this.#prunedThrough = days.at(-1);
    if (deleted > 0) this.#log.info({ deleted, through: this.#prunedThrough, retentionDays: this.#d.retentionDays }, "old samples deleted");
  }
}
