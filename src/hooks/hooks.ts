/**
 * Runs the configured issuance hooks (hook.ts says what they may do) with their bounds: one time
 * bound for all `before` calls of a step, one per observer call, and a bound on observer calls in
 * flight per hook. Nothing a hook does reaches a reply except a `before` refusal.
 */
import type { Logger } from "pino";
import { rateLimited } from "../core/log.js";
import type { BeforeResult, FailedEvent, HookRequest, IssuanceHook, IssuedEvent } from "./hook.js";

export interface HooksOptions {
  /** Bound on the `before` calls of one step together, and on each observer call. */
  timeoutMs: number;
  /** Observer calls in flight per hook beyond which events are dropped (counted). */
  maxPending: number;
  logger: Logger;
}

const settled = Symbol("pending");

/** Deep-freezes an event so observers can only read it. */
function frozen<T extends object>(event: T): Readonly<T> {
  for (const v of Object.values(event)) if (v !== null && typeof v === "object" && !Object.isFrozen(v)) frozen(v as object);
  return Object.freeze(event);
}

export class Hooks {
  #hooks: IssuanceHook[];
  readonly #o: HooksOptions;
  readonly #log: ReturnType<typeof rateLimited>;
  readonly #pending = new Map<IssuanceHook, number>();
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly stats = { refused: 0, failures: 0, timeouts: 0, dropped: 0 };

  constructor(hooks: IssuanceHook[], o: HooksOptions) {
    this.#hooks = hooks;
    this.#o = o;
    this.#log = rateLimited(o.logger.child({ component: "hooks" }));
  }

  get names(): string[] {
    return this.#hooks.map((h) => h.name);
  }

  /** Any hook configured: without, the dispenser skips hooks altogether. */
  get active(): boolean {
    return this.#hooks.length > 0;
  }

  /** Any hook with `before`: then the dispenser looks up earlier answers first (retries are never shown to it). */
  get refusing(): boolean {
    return this.#hooks.some((h) => h.before);
  }

  /** Sets the hooks (once, at start, after loading them). */
  use(hooks: IssuanceHook[]): void {
    this.#hooks = hooks;
  }

  #failed(hook: IssuanceHook, phase: string, e: unknown): void {
    this.stats.failures++;
    this.#log("warn", { hook: hook.name, phase, err: e instanceof Error ? e.message : String(e) }, "hook failed; ignored");
  }

  /**
   * Per request, the reason a `before` hook refused it, or undefined. Hooks run in order; a request
   * one hook refused is not shown to the next. Calls that throw or are still running when the
   * step's time bound passes let their request through.
   */
  async before(requests: HookRequest[]): Promise<(string | undefined)[]> {
    const refusals: (string | undefined)[] = requests.map(() => undefined);
    const hooks = this.#hooks.filter((h) => h.before);
    if (hooks.length === 0 || requests.length === 0) return refusals;
    const deadline = Date.now() + this.#o.timeoutMs;
    for (const hook of hooks) {
      const results: (BeforeResult | typeof settled)[] = requests.map(() => settled);
      const waits: Promise<void>[] = [];
      requests.forEach((request, i) => {
        if (refusals[i] !== undefined) return;
        try {
          const r = (hook.before as NonNullable<IssuanceHook["before"]>)(frozen({ ...request, fields: { ...request.fields } }));
          if (r instanceof Promise)
            waits.push(
              r.then(
                (v) => {
                  results[i] = v;
                },
                (e: unknown) => {
                  results[i] = undefined;
                  this.#failed(hook, "before", e);
                },
              ),
            );
          else results[i] = r;
        } catch (e) {
          results[i] = undefined;
          this.#failed(hook, "before", e);
        }
      });
      if (waits.length > 0) {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<void>((r) => {
          timer = setTimeout(r, Math.max(0, deadline - Date.now()));
        });
        await Promise.race([Promise.all(waits), late]);
        clearTimeout(timer);
      }
      results.forEach((r, i) => {
        if (r === settled) {
          if (refusals[i] === undefined && waits.length > 0) {
            this.stats.timeouts++;
            this.#log("warn", { hook: hook.name, ms: this.#o.timeoutMs }, "hook's before did not answer in time; request let through");
          }
          return;
        }
        if (r && typeof r.refuse === "string") {
          refusals[i] = r.refuse.slice(0, 500) || "refused";
          this.stats.refused++;
        }
      });
    }
    return refusals;
  }

  /** Hands issued numbers to the `after` hooks, off the reply path. */
  issued(events: IssuedEvent[]): void {
    this.#observe("after", events);
  }

  /** Hands error answers to the `onError` hooks, off the reply path. */
  failed(events: FailedEvent[]): void {
    this.#observe("onError", events);
  }

  #observe(phase: "after" | "onError", events: (IssuedEvent | FailedEvent)[]): void {
    if (events.length === 0) return;
    const hooks = this.#hooks.filter((h) => h[phase]);
    if (hooks.length === 0) return;
    const shown = events.map((e) => frozen({ ...e }));
    for (const hook of hooks) {
      const call = hook[phase] as (e: IssuedEvent | FailedEvent) => void | Promise<void>;
      for (const event of shown) {
        const pending = this.#pending.get(hook) ?? 0;
        if (pending >= this.#o.maxPending) {
          this.stats.dropped++;
          this.#log("warn", { hook: hook.name, pending }, "hook is behind; events dropped");
          continue;
        }
        let r: void | Promise<void>;
        try {
          r = call.call(hook, event);
        } catch (e) {
          this.#failed(hook, phase, e);
          continue;
        }
        if (!(r instanceof Promise)) continue;
        this.#pending.set(hook, pending + 1);
        let timer: NodeJS.Timeout | undefined;
        const bounded = Promise.race([
          r.catch((e: unknown) => this.#failed(hook, phase, e)),
          new Promise<void>((resolve) => {
            timer = setTimeout(() => {
              this.stats.timeouts++;
              this.#log("warn", { hook: hook.name, phase, ms: this.#o.timeoutMs }, "hook call did not settle in time");
              resolve();
            }, this.#o.timeoutMs);
          }),
        ]).finally(() => {
          clearTimeout(timer);
          this.#pending.set(hook, (this.#pending.get(hook) ?? 1) - 1);
          this.#inFlight.delete(bounded);
        });
        this.#inFlight.add(bounded);
      }
    }
  }

  /** Waits for observer calls in flight (each bounded), then closes every hook (each bounded). */
  async close(): Promise<void> {
    await Promise.all([...this.#inFlight]);
    for (const hook of this.#hooks) {
      if (!hook.close) continue;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.resolve()
          .then(() => hook.close?.())
          .catch((e: unknown) => this.#failed(hook, "close", e)),
        new Promise<void>((r) => {
          timer = setTimeout(r, Math.max(this.#o.timeoutMs, 5000));
        }),
      ]);
      clearTimeout(timer);
    }
  }
}
