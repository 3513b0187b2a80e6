/**
 * `idd:rate`: per-sequence issuance rates. Counts requests and numbers per sequence and logs the
 * busiest sequences' rates every `logEveryMs` (IDD_RATE_LOG_MS, 60 s; 0: never), so an operator sees
 * what is consumed how fast. Sequence names are user data: at most 1,000 are counted per window,
 * the rest together as `other`.
 */
import type { HookContext, IssuanceHook } from "../hook.js";

const MAX_SEQUENCES = 1000;
const SHOWN = 20;

export interface RateHook extends IssuanceHook {
  /** Requests and numbers a second per sequence since the last window began. */
  rates(): { sequence: string; requestsPerSecond: number; numbersPerSecond: number }[];
}

export function rateHook(ctx: HookContext, logEveryMs: number): RateHook {
  let counts = new Map<string, { requests: number; numbers: number }>();
  let since = Date.now();
  const rates = () => {
    const s = Math.max(0.001, (Date.now() - since) / 1000);
    return [...counts]
      .map(([sequence, c]) => ({ sequence, requestsPerSecond: c.requests / s, numbersPerSecond: c.numbers / s }))
      .sort((a, b) => b.numbersPerSecond - a.numbersPerSecond);
  };
  const timer =
    logEveryMs > 0
      ? setInterval(() => {
          const top = rates().slice(0, SHOWN);
          if (top.length > 0)
            ctx.logger.info({ rates: top.map((r) => `${r.sequence}=${r.numbersPerSecond.toFixed(1)}/s`) }, "issuance rates");
          counts = new Map();
          since = Date.now();
        }, logEveryMs).unref()
      : undefined;
  return {
    name: "idd:rate",
    after(e) {
      if (e.deduped) return;
      const name = counts.has(e.sequence) || counts.size < MAX_SEQUENCES ? e.sequence : "other";
      const c = counts.get(name) ?? { requests: 0, numbers: 0 };
      c.requests++;
      c.numbers += e.count;
      counts.set(name, c);
    },
    rates,
    close: () => clearInterval(timer),
  };
}
