/** A batch's answers per sequence and status, for instrumentation (dispenser.answered). */
import type { AnswerCount, Instrumentation } from "../core/events.js";
import type { IdReply } from "../protocol/reply.js";

/**
 * Reports a batch's answers per sequence and status. Numbers count once, when issued: an answer
 * sent again from the dedupe store (a retry, a redelivery) counts as a request and a dedupe hit,
 * not as numbers, so the pool's numbers_total is what clients were given. The numbers a CONFIRM or
 * VOID settled (`settled`) were not issued either.
 */
export function reportCounts(
  events: Instrumentation | undefined,
  partition: number,
  replies: IdReply[],
  deduped: Set<number>,
  settled?: Set<number>,
): void {
  if (!events) return;
  const counts = new Map<string, AnswerCount>();
  replies.forEach((r, i) => {
    const status = r.error?.code ?? "OK";
    const key = `${r.sequence}\u0000${status}`;
    let c = counts.get(key);
    if (!c) {
      c = { sequence: r.sequence, status, requests: 0, numbers: 0 };
      counts.set(key, c);
    }
    c.requests++;
    if (!deduped.has(i) && !settled?.has(i)) for (const x of r.ranges) c.numbers += Number(x.last - x.first + 1n);
  });
  events.emit("dispenser.answered", { partition, counts: [...counts.values()], deduped: deduped.size });
}
