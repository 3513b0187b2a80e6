/**
 * Allocators for tests on a real Redis and MongoDB, built in one place: small blocks, a quick flush
 * of the audit log, no sampling, no error logging, unless a test says otherwise.
 */
import { randomUUID } from "node:crypto";
import { Allocator, type AllocatorOptions } from "../../src/issuing/sources/counter/allocator.js";
import type { AllocationConfig, Counter } from "../../src/issuing/sources/counter/counter.js";
import type { SequenceDef } from "../../src/sequences/definition.js";

/** Small blocks and reservations, so tests turn them over. */
export const SMALL_BLOCKS: AllocationConfig = {
  minBlock: 10,
  maxBlock: 1000,
  initialBlock: 100,
  targetBlockMs: 1000,
  prefetchAt: 0.5,
  reserveLowMs: 60_000,
  reserveAheadMs: 120_000,
  minReservation: 1000,
};

/** The connections, and whatever differs from the test defaults; `config` is laid over SMALL_BLOCKS. */
export type TestAllocatorOptions = Pick<AllocatorOptions, "redis" | "store"> &
  Partial<Omit<AllocatorOptions, "redis" | "store" | "config">> & { config?: Partial<AllocationConfig> };

/**
 * The gen test allocators claim under when a test names none: one per test process, from the clock
 * as takeOwner makes them, so that several test "workers" may claim one sequence side by side (a
 * worker's gen is its partition's; tests of fencing pass gens of their own).
 */
export const TEST_GEN = Date.now() * 1000;

/** An allocator whose counters claim under `gen` unless a test passes another. */
export class TestAllocator extends Allocator {
  gen = TEST_GEN;

  override counter(def: SequenceDef, period: string | null, gen: number | undefined = this.gen): Counter {
    return super.counter(def, period, gen);
  }
}

export function testAllocator(o: TestAllocatorOptions): TestAllocator {
  return new TestAllocator({
    worker: `test-${randomUUID().slice(0, 8)}`,
    clock: Date.now,
    flushMs: 50,
    sampleMs: 60_000,
    onLogError: () => {},
    ...o,
    config: { ...SMALL_BLOCKS, ...o.config },
  });
}

/** Allocators of several workers on the same services, closed together. */
export class TestAllocators {
  readonly #open: Allocator[] = [];

  /** `base` is read at each `worker()`, so it may name connections a `beforeAll` makes later. */
  constructor(private readonly base: () => TestAllocatorOptions) {}

  /** A new allocator for `worker`. */
  worker(worker: string): TestAllocator {
    const a = testAllocator({ ...this.base(), worker });
    this.#open.push(a);
    return a;
  }

  async close(): Promise<void> {
    await Promise.all(this.#open.splice(0).map((a) => a.close()));
  }
}
