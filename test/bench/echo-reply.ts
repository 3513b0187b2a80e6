/**
 * What both node echo services (echo.ts on kafkajs, echo-platformatic.ts) answer: a JSON IdReply
 * with the next numbers of an in-memory counter per sequence, and where a request asks it sent.
 */

/** kafka_replyPartition: ASCII decimal or 4 bytes big-endian (Spring). */
export function replyPartition(b: Buffer | undefined): number | undefined {
  if (!b || b.length === 0) return undefined;
  const text = b.toString("latin1");
  if (/^\d{1,9}$/.test(text)) return Number(text);
  return b.length === 4 ? b.readInt32BE(0) : undefined;
}

/** The reply to one JSON request, its numbers taken from `counters` (the last number per sequence). */
export function echoReply(request: Buffer, counters: Map<string, number>, now: number): Buffer {
  const req = JSON.parse(request.toString("utf8")) as { requestId: string; sequence: string; count?: number };
  const count = req.count ?? 1;
  const first = (counters.get(req.sequence) ?? 0) + 1;
  counters.set(req.sequence, first + count - 1);
  return Buffer.from(
    JSON.stringify({
      requestId: req.requestId,
      sequence: req.sequence,
      period: null,
      status: "OK",
      ranges: [{ first, last: first + count - 1 }],
      formatted: [],
      error: null,
      issuedAt: now,
    }),
    "utf8",
  );
}
