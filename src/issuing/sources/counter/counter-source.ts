/**
 * Counters as a number source (../number-source.ts): a request's serials from its counter's blocks
 * in memory, or a claim when they do not suffice; a cold step claims for all its counters at once.
 */
import type { Range } from "../../../core/range.js";
import type { IdRequest } from "../../../protocol/request.js";
import type { SequenceDef } from "../../../sequences/sequence-def.js";
import type { BatchTake } from "../../batch.js";
import type { NumberSource } from "../number-source.js";
import type { Allocator } from "./allocator.js";

export class CounterSource implements NumberSource {
  readonly #allocator: Allocator;

  constructor(allocator: Allocator) {
    this.#allocator = allocator;
  }

  take(request: IdRequest, def: SequenceDef, period: string | null, batch: BatchTake): Range[] | Promise<Range[]> {
    const counter = this.#allocator.counter(def, period, batch.gen);
    return counter.takeNow(request.count) ?? counter.take(request.count);
  }

  /** Claims the blocks `count` needs beyond what the counter holds in memory. */
  prepare(def: SequenceDef, period: string | null, count: number, batch: BatchTake): Promise<void> | undefined {
    const counter = this.#allocator.counter(def, period, batch.gen);
    return counter.available >= BigInt(count) ? undefined : counter.prepare(count);
  }

  mustWait(def: SequenceDef, period: string | null, count: number, batch: BatchTake): boolean {
    return this.#allocator.counter(def, period, batch.gen).available < BigInt(count);
  }
}
