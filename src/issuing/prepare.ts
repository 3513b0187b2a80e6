/**
 * The head start of a cold step (dispenser.ts): definitions read and blocks claimed for all the
 * step's sequences at once, before its requests are issued one by one.
 */

import { IddError } from "../core/errors.js";
import { periodOf } from "../core/period.js";
import type { IdRequest } from "../protocol/request.js";
import type { SequenceCache } from "../sequences/cache.js";
import { sourceOf } from "../sequences/kinds/table.js";
import type { SequenceDef } from "../sequences/sequence-def.js";
import type { Batch } from "./batch.js";
import type { Allocator } from "./sources/counter/allocator.js";

/**
 * A cold step (definitions not cached, counters without blocks) waits on MongoDB and Redis once
 * for all its sequences, not once per sequence in turn: the definitions are read and the blocks
 * the step needs claimed at once. Only a head start: failures show when the requests are issued.
 */
export async function prepareClaims(
  requests: IdRequest[],
  batch: Batch,
  now: number,
  deps: { sequences: SequenceCache; allocator: Allocator },
): Promise<void> {
  const { sequences, allocator } = deps;
  const wanted = new Map<string, number>();
  for (const r of requests)
    if (!batch.earlier.has(r) && r.settle === undefined) wanted.set(r.sequence, (wanted.get(r.sequence) ?? 0) + r.count);
  const fromBlocks = (d: SequenceDef) => sourceOf(d) === "counter"; // gapless: MongoDB, no blocks
  const waits: Promise<void>[] = [];
  for (const [name, count] of wanted) {
    const def = sequences.peek(name);
    if (def && !fromBlocks(def)) continue;
    const counter = def && allocator.counter(def, periodOf(def, now), batch.gen);
    if (counter && counter.available >= BigInt(count)) continue;
    waits.push(
      (async () => {
        const d = def ?? (await sequences.require(name));
        if (fromBlocks(d)) await allocator.counter(d, periodOf(d, now), batch.gen).prepare(count);
      })().catch(() => {}),
    );
  }
  if (waits.length > 0) await Promise.all(waits);
}

/**
 * Whether issuing `request` would wait on MongoDB or Redis: its definition is not cached, or its
 * counter has too few numbers in memory. A step past its budget answers such a request UNAVAILABLE
 * rather than wait (dispenser.ts): on a slow MongoDB the claims a cold step's head start could not
 * finish would otherwise be made one request after another, and hold the partition's later
 * requests for minutes. Refusing is always safe (no number is taken); the client asks again.
 */
export function mustWait(request: IdRequest, batch: Batch, now: number, deps: { sequences: SequenceCache; allocator: Allocator }): boolean {
  if (batch.earlier.has(request) || request.settle !== undefined) return false;
  const def = deps.sequences.peek(request.sequence);
  if (!def) return true;
  if (sourceOf(def) !== "counter") return false;
  return deps.allocator.counter(def, periodOf(def, now), batch.gen).available < BigInt(request.count);
}

/** The answer to a request that would wait in a step past its budget. */
export const budgetSpent = (budgetMs: number) =>
  new IddError("UNAVAILABLE", `MongoDB or Redis answered too slowly: this step spent its ${budgetMs} ms and answers what needs them later`);
