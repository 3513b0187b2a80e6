/**
 * A job one worker does for the whole pool, every so often: the worker that owns request partition 0
 * (the assignment tells it, `lead`), so the pool does it once, not once per worker. One pass at a
 * time; one that fails is logged at warn and tried again at the next tick; a worker that starts
 * leading runs a pass at once. Off the request path. A job extends it with its `pass`.
 */
import type { Logger } from "pino";

export interface PoolDutyOptions {
  everyMs: number;
  /** What the log says when a pass failed, before "; trying again later". */
  failed: string;
  log: Logger;
  /** Whether a worker leads before its assignment says (default false). */
  leading?: boolean;
}

export abstract class PoolDuty {
  readonly #o: PoolDutyOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #leading: boolean;

  constructor(o: PoolDutyOptions) {
    this.#o = o;
    this.#leading = o.leading ?? false;
  }

  /** One pass of the job. */
  protected abstract pass(): Promise<void>;

  /** Told when this worker stops leading (after `lead(false)`). */
  protected steppedDown(): void {}

  /** Whether this worker does the job for the pool now. */
  protected get leading(): boolean {
    return this.#leading;
  }

  start(): void {
    this.#timer = setInterval(() => void this.run(), this.#o.everyMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running;
  }

  /** Whether this worker does the job from now on (it owns request partition 0); one that starts runs a pass at once. */
  lead(leading: boolean): void {
    if (leading === this.#leading) return;
    this.#leading = leading;
    if (leading) void this.run();
    else this.steppedDown();
  }

  /** One pass (not two at once), when this worker leads; a failure is logged and tried again next time. */
  run(): Promise<void> {
    if (!this.#leading) return Promise.resolve();
    this.#running ??= this.pass()
      .catch((e: unknown) => this.#o.log.warn({ err: (e as Error).message }, `${this.#o.failed}; trying again later`))
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }
}
