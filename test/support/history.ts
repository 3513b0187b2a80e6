/**
 * Checks a whole history of replies for G1 and G2: no number twice per (sequence, period), and
 * causal order — a request sent after another request's reply arrived gets only larger numbers.
 */
import type { Range } from "../../src/core/range.js";

export interface Issued {
  sequence: string;
  period: string | null;
  ranges: Range[];
  sentAt: number;
  receivedAt: number;
}

export interface HistoryReport {
  numbers: number;
  duplicates: string[];
  orderViolations: string[];
}

/** `unordered`: sequences whose numbers are unique but not ordered (obfuscated): checked for G1 only. */
export function checkHistory(history: Issued[], unordered: ReadonlySet<string> = new Set()): HistoryReport {
  const byCounter = new Map<string, Issued[]>();
  for (const h of history) {
    const key = `${h.sequence}|${h.period ?? ""}`;
    const items = byCounter.get(key);
    if (items) items.push(h);
    else byCounter.set(key, [h]);
  }
  const duplicates: string[] = [];
  const orderViolations: string[] = [];
  let numbers = 0;
  for (const [key, items] of byCounter) {
    // G1: every number once. Ranges are sorted and compared with their neighbours.
    const ranges = items.flatMap((i) => i.ranges).sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
    for (let i = 0; i < ranges.length; i++) {
      const r = ranges[i] as Range;
      numbers += Number(r.last - r.first + 1n);
      const prev = ranges[i - 1];
      if (prev && r.first <= prev.last) duplicates.push(`${key}: [${prev.first}, ${prev.last}] overlaps [${r.first}, ${r.last}]`);
    }
    if (unordered.has(key.slice(0, key.indexOf("|")))) continue;
    // G2: sweep requests by send time; every reply received before that must be below.
    const received = [...items].sort((a, b) => a.receivedAt - b.receivedAt);
    const sent = [...items].sort((a, b) => a.sentAt - b.sentAt);
    let j = 0;
    let maxBefore = -1n;
    for (const s of sent) {
      while (j < received.length && (received[j] as Issued).receivedAt < s.sentAt) {
        for (const r of (received[j] as Issued).ranges) if (r.last > maxBefore) maxBefore = r.last;
        j++;
      }
      const min = s.ranges.reduce((m, r) => (r.first < m ? r.first : m), s.ranges[0]?.first ?? 0n);
      if (s.ranges.length > 0 && min <= maxBefore)
        orderViolations.push(`${key}: sent at ${s.sentAt}, got ${min} after ${maxBefore} was already received`);
      for (let k = 1; k < s.ranges.length; k++) {
        if ((s.ranges[k] as Range).first <= (s.ranges[k - 1] as Range).last)
          orderViolations.push(`${key}: ranges of one reply out of order`);
      }
    }
  }
  return { numbers, duplicates, orderViolations };
}
