/**
 * The dispenser's gapless phase (dispenser.ts): a batch's gapless requests, answered together after
 * its take phase, from MongoDB (gapless-source.ts) rather than from blocks: each ISSUE left `later`
 * by its plan becomes issued or refused, each CONFIRM and VOID settled or refused.
 */
import { IddError, isIddError } from "../../../core/errors.js";
import type { IdRequest } from "../../../protocol/request.js";
import { type Batch, paced } from "../../batch.js";
import { failureOf, refusal } from "../../outcome.js";
import type { RedisGuard } from "../../redis-guard.js";
import type { GaplessSource, GaplessWant } from "./gapless-source.js";

export interface GaplessPhaseDeps {
  /** Absent: the batch's gapless requests are answered UNAVAILABLE. */
  gapless: GaplessSource | undefined;
  /** Raises a sequence's fence to the gen (ownership/): WORKER_FENCED when a newer gen holds it. */
  fence: (sequence: string, gen: number) => Promise<unknown>;
  redis: RedisGuard;
  heartbeatMs: number;
  clock: () => number;
}

/**
 * The gapless phase: the batch's gapless ISSUEs take their numbers from MongoDB together (recorded
 * there before this returns, so before any reply is published), then each CONFIRM and VOID settles.
 * Each settles in a few MongoDB round trips: a long batch of them beats like the take phase, so
 * a slow MongoDB does not cost the partition its membership.
 */
export async function answerGapless(batch: Batch, heartbeat: () => Promise<void>, d: GaplessPhaseDeps): Promise<void> {
  const later = batch.outcomes.flatMap((o, index) => (o.is === "later" ? [{ index, o, request: batch.requests[index] as IdRequest }] : []));
  if (later.length === 0) return;
  const { gapless, clock } = d;
  const fail = (x: (typeof later)[number], e: unknown) => {
    batch.outcomes[x.index] = refusal(failureOf(e), x.o.at);
  };
  if (!gapless) {
    for (const x of later) fail(x, new IddError("UNAVAILABLE", "this worker has no gapless numbering"));
    return;
  }
  const wants = later.flatMap((x) => (x.o.want ? [x.o.want] : []));
  let taken: Awaited<ReturnType<GaplessSource["issue"]>> | undefined;
  try {
    // The batch's answers are recorded under the sequences' fences (I3): raise them first, so no
    // number is inserted by a worker that could not publish it.
    await fenceGapless(batch, wants, d);
    taken = wants.length > 0 ? await gapless.issue(wants) : new Map();
  } catch (e) {
    if (isIddError(e, "WORKER_FENCED")) throw e; // a newer issuer: nothing of the batch is published
    for (const x of later) if (x.o.want) fail(x, e);
  }
  const beat = paced(heartbeat, d.heartbeatMs, clock);
  for (const x of later) {
    if (batch.outcomes[x.index] !== x.o) continue; // refused above
    const beating = beat(clock());
    if (beating) await beating;
    const { want, def, at } = x.o;
    if (want) {
      const t = taken?.get(want);
      if (t instanceof IddError) fail(x, t);
      else if (t) {
        batch.sequences.add(x.request.sequence);
        batch.outcomes[x.index] = { is: "issued", def, answer: t, at };
      }
      continue;
    }
    try {
      const s = await gapless.settle(def, x.request.settle as NonNullable<IdRequest["settle"]>, at);
      batch.outcomes[x.index] = { is: "settled", period: s.period, ranges: s.ranges, at };
    } catch (e) {
      fail(x, e);
    }
  }
}

/** Gapless sequences issued under the batch's gen take no blocks: their fences are raised here, once per gen. */
async function fenceGapless(batch: Batch, wants: GaplessWant[], d: GaplessPhaseDeps): Promise<void> {
  const { gen, partition, lease } = batch;
  if (gen === undefined) return;
  const names = new Set(wants.flatMap((w) => (lease.fenced.has(w.def.name) ? [] : [w.def.name])));
  for (const name of names) {
    // Redis unreachable: answered unrecorded (G3), and the fence is raised on a later step.
    const raised = await d.redis.call(partition, () => d.fence(name, gen).then(() => true));
    if (raised) lease.fenced.add(name);
  }
}
