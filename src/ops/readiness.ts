/**
 * Readiness: whether this worker should get traffic. Ready when it has started (schemas registered,
 * topics in place), its consumer is running in the group, and Redis and MongoDB answer — or have
 * been unreachable for less than the outage budget (they serve from memory and headroom meanwhile,
 * G3 in docs/design.md). Each dependency is probed once a second by a command of its own. How long
 * one has been down is on the monotonic clock: a wall clock stepped an hour ahead would otherwise
 * call a second's outage an hour's, past the budget, and take the worker out of traffic.
 */
import { performance } from "node:perf_hooks";
import type { Instrumentation } from "../core/events.js";

export interface Probe {
  name: string;
  /** Resolves when the dependency answered. */
  ping(): Promise<unknown>;
}

export interface ReadinessState {
  ready: boolean;
  started: boolean;
  consumer: boolean;
  dependencies: { name: string; up: boolean; downForMs: number }[];
}

export class Readiness {
  readonly #probes: Probe[];
  readonly #budgetMs: number;
  readonly #timeoutMs: number;
  readonly #clock: () => number;
  readonly #downSince = new Map<string, number>();
  #started = false;
  #consumer = false;
  #timer: NodeJS.Timeout | undefined;

  /** `clock`: monotonic, `performance.now()` by default. */
  constructor(o: { probes: Probe[]; budgetMs: number; timeoutMs: number; events: Instrumentation; clock?: () => number }) {
    this.#clock = o.clock ?? (() => performance.now());
    this.#probes = o.probes;
    this.#budgetMs = o.budgetMs;
    this.#timeoutMs = o.timeoutMs;
    o.events.on("worker.consumer", (e) => {
      this.#consumer = e.running;
    });
  }

  /** The worker finished starting; probing begins. */
  started(): void {
    this.#started = true;
    const tick = () => void this.probe().finally(() => (this.#timer = setTimeout(tick, 1000).unref()));
    tick();
  }

  stop(): void {
    this.#started = false;
    clearTimeout(this.#timer);
  }

  /** Pings every dependency once (the timer does it every second). */
  async probe(): Promise<void> {
    await Promise.all(
      this.#probes.map(async (p) => {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error("timed out")), this.#timeoutMs);
        });
        try {
          await Promise.race([p.ping(), late]);
          this.#downSince.delete(p.name);
        } catch {
          if (!this.#downSince.has(p.name)) this.#downSince.set(p.name, this.#clock());
        } finally {
          clearTimeout(timer);
        }
      }),
    );
  }

  state(): ReadinessState {
    const now = this.#clock();
    const dependencies = this.#probes.map((p) => {
      const since = this.#downSince.get(p.name);
      return { name: p.name, up: since === undefined, downForMs: since === undefined ? 0 : Math.round(now - since) };
    });
    const withinBudget = dependencies.every((d) => d.downForMs <= this.#budgetMs);
    return { ready: this.#started && this.#consumer && withinBudget, started: this.#started, consumer: this.#consumer, dependencies };
  }
}
