/** The unit a worker's step works on: one request record, what it parsed to, and what answers it. */
import { errorReply } from "../protocol/reply.js";
import type { Accepted, Rejected } from "../protocol/request.js";
import type { InRecord, OutRecord } from "../transport/kafka/index.js";
import { replyRecord } from "./answer.js";

/**
 * One request record of a step: what it parsed to, and the record that answers it once decided (a
 * reply, or the request itself forwarded to its sequence's home partition).
 */
export interface Item {
  record: InRecord;
  parsed: Accepted | Rejected;
  out?: OutRecord;
  /** The home partition `out` forwards the request to. */
  forwardedTo?: number;
}

/** An accepted request with numbers to issue. */
export interface Pending extends Item {
  parsed: Accepted;
}

/** Makes `out` the error reply of a rejected request that has a reply address. */
export function replyError(item: Item, replySchemaId: number, now: number): void {
  const p = item.parsed as Rejected;
  const reply = errorReply(p.requestId, p.sequence, p.error, now);
  item.out = replyRecord(reply, p.address as NonNullable<Rejected["address"]>, item.record.key, p.format, replySchemaId);
}
