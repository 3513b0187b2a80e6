/** A batch's answers per sequence and status, for instrumentation (dispenser.answered). */
import type { AnswerCount, Instrumentation } from "../core/events.js";
import type { IdReply } from "../protocol/reply.js";
import type { Outcome } from "./outcome.js";

/**
 * Reports a batch's answers per sequence and status. Numbers count once, when issued: an answer
 * sent again from the dedupe store (a retry, a redelivery) counts as a request and a dedupe hit,
 * not as numbers, so the pool's numbers_total is what clients were given. The numbers a CONFIRM or
 * VOID settled were not issued either.
 */
export function reportCounts(
  events: Instrumentation | undefined,
  partition: number,
  replies: readonly IdReply[],
  outcomes: readonly Outcome[],
): void {
  if (!events) return;
  let deduped = 0;
  // Per sequence, per status: no key string made per reply.
  const counts = new Map<string, Map<string, AnswerCount>>();
  for (let i = 0; i < replies.length; i++) {
    const r = replies[i] as IdReply;
    const status = r.error?.code ?? "OK";
    let bySequence = counts.get(r.sequence);
    if (!bySequence) {
      bySequence = new Map();
      counts.set(r.sequence, bySequence);
    }
    let c = bySequence.get(status);
    if (!c) {
      c = { sequence: r.sequence, status, requests: 0, numbers: 0 };
      bySequence.set(status, c);
    }
    c.requests++;
    const is = outcomes[i]?.is;
    if (is === "deduped") deduped++;
    if (is === "issued") for (const x of r.ranges) c.numbers += Number(x.last - x.first + 1n);
  }
  const all = [...counts.values()].flatMap((m) => [...m.values()]);
  events.emit("dispenser.answered", { partition, counts: all, deduped });
}
