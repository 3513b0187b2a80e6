/**
 * The head start of a cold step (dispenser.ts): definitions read and every source readied for all
 * the step's sequences at once (a counter's blocks claimed), before its requests are issued one by
 * one; and the step budget's test of whether a request would wait.
 */
import { IddError } from "../core/errors.js";
import { periodOf } from "../core/period.js";
import type { IdRequest } from "../protocol/request.js";
import type { SequenceCache } from "../sequences/cache.js";
import type { SourceName } from "../sequences/kinds/kind.js";
import { sourceOf } from "../sequences/kinds/table.js";
import type { SequenceDef } from "../sequences/sequence-def.js";
import type { Batch } from "./batch.js";
import type { NumberSource } from "./sources/number-source.js";

export interface PrepareDeps {
  sequences: SequenceCache;
  sources: Record<SourceName, NumberSource>;
}

/**
 * A cold step (definitions not cached, counters without blocks) waits on MongoDB and Redis once
 * for all its sequences, not once per sequence in turn: the definitions are read and each source
 * readies what the step will take of it at once. Only a head start: failures show when the
 * requests are issued.
 */
export async function prepareSources(requests: IdRequest[], batch: Batch, now: number, deps: PrepareDeps): Promise<void> {
  const { sequences, sources } = deps;
  const wanted = new Map<string, number>();
  for (const r of requests)
    if (!batch.earlier.has(r) && r.settle === undefined) wanted.set(r.sequence, (wanted.get(r.sequence) ?? 0) + r.count);
  const ready = (d: SequenceDef, count: number) => sources[sourceOf(d)].prepare?.(d, periodOf(d, now), count, batch);
  const waits: Promise<void>[] = [];
  for (const [name, count] of wanted) {
    const def = sequences.peek(name);
    const waiting = def ? ready(def, count) : sequences.require(name).then((d) => ready(d, count));
    if (waiting) waits.push(waiting.catch(() => {}));
  }
  if (waits.length > 0) await Promise.all(waits);
}

/**
 * Whether issuing `request` would wait on MongoDB or Redis: its definition is not cached, or its
 * source says so (a counter with too few numbers in memory). A step past its budget answers such a
 * request UNAVAILABLE rather than wait (dispenser.ts): on a slow MongoDB the claims a cold step's
 * head start could not finish would otherwise be made one request after another, and hold the
 * partition's later requests for minutes. Refusing is always safe (no number is taken); the client
 * asks again.
 */
export function mustWait(request: IdRequest, batch: Batch, now: number, deps: PrepareDeps): boolean {
  if (batch.earlier.has(request) || request.settle !== undefined) return false;
  const def = deps.sequences.peek(request.sequence);
  if (!def) return true;
  return deps.sources[sourceOf(def)].mustWait?.(def, periodOf(def, now), request.count, batch) ?? false;
}

/** The answer to a request that would wait in a step past its budget. */
export const budgetSpent = (budgetMs: number) =>
  new IddError("UNAVAILABLE", `MongoDB or Redis answered too slowly: this step spent its ${budgetMs} ms and answers what needs them later`);
