/** The part of a counter's number line a reader wants: records reaching into [from, to]. */
import { toInt64 } from "./int64.js";

export interface Window {
  from?: bigint;
  to?: bigint;
}

/** A stretch of numbers, first to last inclusive. */
export interface Span {
  first: bigint;
  last: bigint;
}

/** The filter for records `{first, last}` that overlap the window. */
export function windowFilter(w: Window): Record<string, unknown> {
  return {
    ...(w.from !== undefined && { last: { $gte: toInt64(w.from) } }),
    ...(w.to !== undefined && { first: { $lte: toInt64(w.to) } }),
  };
}
