/**
 * Where a request's serials come from, chosen by its kind's `source`: the counter source takes
 * blocks of the sequence's Redis counter (allocation/), the clock source makes snowflake ids
 * (snowflake/clock-source.ts).
 */

import type { Range } from "../../core/range.js";
import type { PartitionLease } from "../../ownership/partition-lease.js";
import type { SequenceDef } from "../../sequences/sequence-def.js";
import type { Allocator } from "./counter/allocator.js";

/** What one batch's takes share: its partition's lease and gen, and the largest snowflake id answered per sequence (recorded with it). */
export interface BatchTake {
  lease: PartitionLease;
  /** The gen of the partition the batch is answered under (undefined: Redis was unreachable). */
  gen: number | undefined;
  highs: Map<string, bigint>;
}

export interface NumberSource {
  /** `count` serials of `def` in `period`; synchronous when they are in memory already. */
  take(def: SequenceDef, count: number, period: string | null, batch: BatchTake): Range[] | Promise<Range[]>;
}

/** Serials from the sequence's counter: its blocks in memory, or a claim when they do not suffice. */
export class CounterSource implements NumberSource {
  readonly #allocator: Allocator;

  constructor(allocator: Allocator) {
    this.#allocator = allocator;
  }

  take(def: SequenceDef, count: number, period: string | null, batch: BatchTake): Range[] | Promise<Range[]> {
    const counter = this.#allocator.counter(def, period, batch.gen);
    return counter.takeNow(count) ?? counter.take(count);
  }
}
