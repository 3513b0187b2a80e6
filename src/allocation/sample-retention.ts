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
import { PoolDuty } from "../core/pool-duty.js";
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
  readonly #duty: PoolDuty;
  /** The newest day deleted (or found empty) so far: later runs start after it. */
  #prunedThrough: string | undefined;

  constructor(deps: SampleRetentionDeps) {
    this.#d = deps;
    this.#log = deps.logger.child({ component: "samples" });
    this.#duty = new PoolDuty({
      everyMs: deps.everyMs ?? 3_600_000,
      pass: () => this.#prune(),
      failed: "deleting old samples failed",
      log: this.#log,
    });
  }

  start(): void {
    this.#duty.start();
  }

  stop(): Promise<void> {
    return this.#duty.stop();
  }

  /** Whether this worker prunes for the pool from now on (it owns request partition 0); one that starts prunes at once. */
  lead(leading: boolean): void {
    this.#duty.lead(leading);
  }

  /** One pass (not two at once), when this worker leads; a failure is logged and tried again next time. */
  run(): Promise<void> {
    return this.#duty.run();
  }

  /** The UTC days this run deletes: those wholly older than the retention, not deleted before. */
  days(now = this.#d.clock()): string[] {
    const last = now - this.#d.retentionDays * DAY_MS - DAY_MS; // the newest day wholly out of retention
    const from = this.#prunedThrough ? Date.parse(this.#prunedThrough) + DAY_MS : last - FIRST_LOOKBACK_DAYS * DAY_MS;
    return from > last ? [] : sampleDays(from, last);
  }

  async #prune(): Promise<void> {
    const days = this.days();
    if (days.length === 0) return;
    const deleted = await this.#d.store.deleteSampleDays(days);
    this.#prunedThrough = days.at(-1);
    if (deleted > 0) this.#log.info({ deleted, through: this.#prunedThrough, retentionDays: this.#d.retentionDays }, "old samples deleted");
  }
}
