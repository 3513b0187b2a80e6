/**
 * The gapless housekeeping of the pool, run every IDD_GAPLESS_SWEEP_MS by the worker that owns
 * request partition 0 (one worker, not each: the pending numbers are read whole): numbers pending
 * past their confirm timeout are voided with reason `expired` (any worker may run it, e.g. two
 * during a rebalance: a number's first settlement wins, so each is voided once, and one a CONFIRM
 * won is left confirmed), logged as ranges per counter and counted; then each gapless sequence's
 * numbers are counted per state for /metrics and /status, from bounded reads
 * (src/storage/gapless-counts.ts). Off the request path.
 *
 * Expiry is judged on MongoDB's clock (the server's time, read once a sweep), not this worker's:
 * the numbers it voids are mostly other workers', so a sweeper whose clock is an hour ahead would
 * void every pending number of the pool before its timeout (the chaos suite's clock-start saw it).
 * Its own clock only serves to say, in the log, how far it is off.
 */
import type { Logger } from "pino";
import type { Instrumentation } from "../../../core/events.js";
import { PoolDuty } from "../../../core/pool-duty.js";
import { toRanges } from "../../../core/range.js";
import type { CounterNumbers } from "../../../storage/gapless.js";
import type { Store } from "../../../storage/store.js";

/** Numbers voided in one update; a sweep repeats until fewer are left. */
const SWEEP_BATCH = 10_000;
/** This worker's clock this far from MongoDB's is logged (once, until it is within again). */
const SKEW_LOGGED_MS = 5000;

export interface GaplessSweepDeps {
  store: Pick<Store, "serverTime" | "expiredGapless" | "settleGapless" | "gaplessSettlements" | "copyGaplessSettlements" | "gaplessCounts">;
  worker: string;
  everyMs: number;
  /** This worker's wall clock: compared with MongoDB's for the log, never to judge expiry. */
  clock: () => number;
  events: Instrumentation;
  logger: Logger;
}

export class GaplessSweep extends PoolDuty {
  readonly #d: GaplessSweepDeps;
  readonly #log: Logger;
  /** Whether this worker's clock was last seen off MongoDB's by more than SKEW_LOGGED_MS. */
  #skewed = false;

  constructor(deps: GaplessSweepDeps) {
    const log = deps.logger.child({ component: "gapless" });
    super({ everyMs: deps.everyMs, failed: "gapless sweep failed", log, leading: true });
    this.#d = deps;
    this.#log = log;
  }

  /** One that stops sweeping says so (`gapless.counts` with `counting: false`), so its last counts are not read as current. */
  protected override steppedDown(): void {
    this.#d.events.emit("gapless.counts", { counts: [], counting: false });
  }

  #skew(ms: number): void {
    const skewed = Math.abs(ms) > SKEW_LOGGED_MS;
    if (skewed === this.#skewed) return;
    this.#skewed = skewed;
    if (skewed)
      this.#log.warn(
        { skewMs: Math.round(ms) },
        "this worker's clock is off MongoDB's: gapless expiry is judged, and expiresAt written, on MongoDB's",
      );
    else this.#log.info({ skewMs: Math.round(ms) }, "this worker's clock agrees with MongoDB's again");
  }

  /** One sweep and count. */
  protected async pass(): Promise<void> {
    const { store, worker, clock, events } = this.#d;
    for (;;) {
      const now = new Date(await store.serverTime());
      this.#skew(clock() - now.getTime());
      const expired = await store.expiredGapless(now, SWEEP_BATCH);
      const byCounter = new Map<string, CounterNumbers>();
      for (const v of expired) {
        const k = `${v.sequence}\u0000${v.period ?? ""}`;
        const c = byCounter.get(k) ?? { sequence: v.sequence, period: v.period, numbers: [] };
        c.numbers.push(v.number);
        byCounter.set(k, c);
      }
      for (const c of byCounter.values()) {
        const { won, taken } = await store.settleGapless(c, "voided", "expired", now, worker);
        // Settled by a CONFIRM or VOID (or another sweep) whose copy into the number's document is missing or on its way.
        if (taken.length > 0)
          await store.copyGaplessSettlements([...(await store.gaplessSettlements(c.sequence, c.period, taken)).values()]);
        if (won.length === 0) continue;
        const ranges = toRanges(won.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
        this.#log.warn(
          {
            sequence: c.sequence,
            period: c.period,
            voided: ranges.map((r) => (r.first === r.last ? `${r.first}` : `${r.first}-${r.last}`)),
          },
          "gapless numbers neither confirmed nor voided in time: voided, reason expired",
        );
        events.emit("gapless.expired", { sequence: c.sequence, period: c.period, numbers: won.length });
      }
      if (expired.length < SWEEP_BATCH) break;
    }
    const counts = await store.gaplessCounts();
    // Partition 0 went elsewhere while this sweep ran: its "not counting" stands, or the status
    // would show this worker's counts as current for good.
    if (this.leading) events.emit("gapless.counts", { counts });
  }
}
