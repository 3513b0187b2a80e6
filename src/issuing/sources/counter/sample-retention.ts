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
import { PoolDuty } from "../../../core/pool-duty.js";
import { sampleDays } from "../../../storage/samples.js";
import type { Store } from "../../../storage/store.js";

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

export class SampleRetention extends PoolDuty {
  readonly #d: SampleRetentionDeps;
  readonly #log: Logger;
  /** The newest day deleted (or found empty) so far: later runs start after it. */
  #prunedThrough: string | undefined;

  constructor(deps: SampleRetentionDeps) {
    const log = deps.logger.child({ component: "samples" });
    super({ everyMs: deps.everyMs ?? 3_600_000, failed: "deleting old samples failed", log });
    this.#d = deps;
    this.#log = log;
  }

  /** The UTC days this run deletes: those wholly older than the retention, not deleted before. */
  days(now = this.#d.clock()): string[] {
    const last = now - this.#d.retentionDays * DAY_MS - DAY_MS; // the newest day wholly out of retention
    const from = this.#prunedThrough ? Date.parse(this.#prunedThrough) + DAY_MS : last - FIRST_LOOKBACK_DAYS * DAY_MS;
    return from > last ? [] : sampleDays(from, last);
  }

  /** One pass: the days aged out since the last, deleted. */
  protected async pass(): Promise<void> {
    const days = this.days();
    if (days.length === 0) return;
    const deleted = await this.#d.store.deleteSampleDays(days);
    this.#prunedThrough = days.at(-1);
    if (deleted > 0) this.#log.info({ deleted, through: this.#prunedThrough, retentionDays: this.#d.retentionDays }, "old samples deleted");
  }
}
