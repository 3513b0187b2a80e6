/**
 * The chaos run's gapless sequence (issue #21): clients take its numbers one to three at a time and
 * settle each set, confirming most and voiding every seventh with a reason of their own, as an
 * invoicing service would. After every fault, and at the end, `idd audit` (the same function, in
 * process) must show its series without a single unexplained number, and with no number left
 * pending past its confirm timeout and a sweep; at the end, every settlement a client saw succeed
 * must be the number's state in the audit.
 */
import { performance } from "node:perf_hooks";
import { type AuditStore, audit, type CounterGap } from "../../src/audit/audit.js";
import type { IdClient } from "../../src/client/id-client.js";
import { IddError } from "../../src/core/errors.js";
import type { Range } from "../../src/core/range.js";
import type { RequestLog } from "./records.js";

/** How long a chaos gapless number may stay pending, and how often the workers sweep. */
export const GAPLESS_CONFIRM_TIMEOUT_MS = 20_000;
export const GAPLESS_SWEEP_MS = 5_000;
/** A pending number past its expiry by more than this was not swept (a sweep may be running late under load). */
const OVERDUE_MARGIN_MS = 3 * GAPLESS_SWEEP_MS + 10_000;

/** A CONFIRM or VOID a client sent, and how it ended. */
export interface Settlement {
  sequence: string;
  period: string | null;
  numbers: bigint[];
  action: "CONFIRM" | "VOID";
  reason: string | null;
  /** Undefined: the reply said settled. */
  code?: string;
}

const numbersOf = (ranges: readonly Range[]) =>
  ranges.flatMap((r) => Array.from({ length: Number(r.last - r.first + 1n) }, (_, i) => r.first + BigInt(i)));

/**
 * One client's loop over the gapless sequence: take 1–3 numbers (recorded in the run's history like
 * any request: checked for duplicates and order), then settle them.
 */
export async function gaplessLoop(
  client: IdClient,
  sequence: string,
  requests: RequestLog,
  settlements: Settlement[],
  o: { random: () => number; timeoutMs: number; stopping: () => boolean; sleep: (ms: number) => Promise<void> },
): Promise<void> {
  let k = 0;
  while (!o.stopping()) {
    const r = await requests.request(client, sequence, 1 + Math.floor(o.random() * 3), false, o.timeoutMs);
    if (r.code !== undefined || !r.ranges) {
      await o.sleep(100);
      continue;
    }
    const numbers = numbersOf(r.ranges);
    const period = r.period ?? null;
    const voiding = ++k % 7 === 0;
    const s: Settlement = {
      sequence,
      period,
      numbers,
      action: voiding ? "VOID" : "CONFIRM",
      reason: voiding ? `chaos: order ${k} cancelled` : null,
    };
    try {
      if (voiding) await client.void(sequence, numbers, s.reason as string, { period, timeoutMs: o.timeoutMs });
      else await client.confirm(sequence, numbers, { period, timeoutMs: o.timeoutMs });
    } catch (e) {
      s.code = e instanceof IddError ? e.code : `UNTYPED:${(e as Error)?.name}`;
    }
    settlements.push(s);
    await o.sleep(20); // an invoicing service, not a burst: the other sequences carry the load
  }
}

export interface GaplessAudit {
  answered: bigint;
  voided: bigint;
  pending: bigint;
  unexplained: bigint;
  /** Pending numbers past their expiry by more than a few sweeps. */
  overdue: bigint;
  /** Per number voided: the reason it carries. */
  voidReasons: Map<bigint, string>;
  /** Numbers in any gap (voided, pending, unexplained). */
  inGaps: (n: bigint) => boolean;
  ms: number;
}

/** `idd audit` over the gapless sequence (as the command runs it), at `now`. */
export async function auditGapless(store: AuditStore, sequence: string, now: number): Promise<GaplessAudit> {
  const t0 = performance.now();
  const gaps: CounterGap[] = [];
  const r = await audit(store, { sequence, settleMs: 0, onGap: (g) => void gaps.push(g) });
  const voidReasons = new Map<bigint, string>();
  let overdue = 0n;
  for (const g of gaps) {
    const detail = g.evidence?.slice(g.evidence.indexOf(": ") + 2) ?? "";
    if (g.reason === "voided") for (let n = g.first; n <= g.last; n++) voidReasons.set(n, detail);
    if (g.reason === "pending") {
      const expires = Date.parse(detail.replace(/^expires /, ""));
      if (Number.isFinite(expires) && now - expires > OVERDUE_MARGIN_MS) overdue += g.last - g.first + 1n;
    }
  }
  const sorted = gaps.sort((a, b) => (a.first < b.first ? -1 : 1));
  return {
    answered: r.total.answered,
    voided: r.total.gaps.voided.numbers,
    pending: r.total.gaps.pending.numbers,
    unexplained: r.total.gaps.unexplained.numbers,
    overdue,
    voidReasons,
    inGaps: (n) => {
      let lo = 0;
      let hi = sorted.length - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        const g = sorted[mid] as CounterGap;
        if (n < g.first) hi = mid - 1;
        else if (n > g.last) lo = mid + 1;
        else return true;
      }
      return false;
    },
    ms: performance.now() - t0,
  };
}

export const showGaplessAudit = (sequence: string, a: GaplessAudit) =>
  `idd audit ${sequence}: confirmed ${a.answered}, voided ${a.voided}, pending ${a.pending}, unexplained ${a.unexplained}, pending past expiry and sweeps ${a.overdue} (${(a.ms / 1000).toFixed(1)} s)`;

/** What a phase's (or the run's) gapless audit must show: nothing unexplained, nothing overdue. */
export function gaplessAuditFailures(a: GaplessAudit): string[] {
  const out: string[] = [];
  if (a.unexplained > 0n) out.push(`idd audit: ${a.unexplained} unexplained numbers of the gapless sequence`);
  if (a.overdue > 0n) out.push(`idd audit: ${a.overdue} gapless numbers still pending well past their expiry (no sweep voided them)`);
  return out;
}

/**
 * At the end: every settlement a client saw succeed is the number's state in the audit (a confirmed
 * number lies in no gap; a voided one carries the client's reason), and the audit confirms no more
 * numbers than clients tried to confirm.
 */
export function compareGapless(a: GaplessAudit, settlements: readonly Settlement[]): string[] {
  const out: string[] = [];
  let tried = 0n;
  const wrong: string[] = [];
  for (const s of settlements) {
    if (s.action === "CONFIRM") tried += BigInt(s.numbers.length);
    if (s.code !== undefined) continue;
    for (const n of s.numbers) {
      if (s.action === "CONFIRM" && a.inGaps(n)) wrong.push(`${n} confirmed to its client, not confirmed in the audit`);
      if (s.action === "VOID" && a.voidReasons.get(n) !== s.reason)
        wrong.push(`${n} voided by its client (${s.reason}), in the audit: ${a.voidReasons.get(n) ?? "not voided"}`);
    }
  }
  if (wrong.length > 0)
    out.push(`${wrong.length} gapless numbers whose settlement the audit does not show: ${wrong.slice(0, 5).join("; ")}`);
  if (a.answered > tried) out.push(`the audit shows ${a.answered} confirmed gapless numbers, clients confirmed at most ${tried}`);
  return out;
}
