/**
 * Gapless numbers as a number source (../number-source.ts): `take` leaves each of a batch's gapless
 * requests `later`, and `finish` answers them together after the take phase, from MongoDB
 * (gapless-source.ts) rather than from blocks: each ISSUE becomes issued or refused, each CONFIRM
 * and VOID settled or refused.
 */
import { IddError, isIddError } from "../../../core/errors.js";
import type { IdRequest } from "../../../protocol/request.js";
import { type Batch, paced } from "../../batch.js";
import { failureOf, type Outcome, refusal } from "../../outcome.js";
import type { RedisGuard } from "../../redis-guard.js";
import type { NumberSource } from "../number-source.js";
import { type GaplessSource, type GaplessWant, gaplessDef } from "./gapless-source.js";

export interface GaplessPhaseDeps {
  /** Absent: the batch's gapless requests are answered UNAVAILABLE. */
  gapless: GaplessSource | undefined;
  /** Raises a sequence's fence to the gen (ownership/): WORKER_FENCED when a newer gen holds it. */
  fence: (sequence: string, gen: number) => Promise<unknown>;
  redis: RedisGuard;
  heartbeatMs: number;
  clock: () => number;
}

type Later = Extract<Outcome, { is: "later" }>;

export class GaplessPhase implements NumberSource {
  readonly #d: GaplessPhaseDeps;

  constructor(d: GaplessPhaseDeps) {
    this.#d = d;
  }

  take(): "later" {
    return "later";
  }

  /**
   * The batch's gapless ISSUEs take their numbers from MongoDB together (recorded there before this
   * returns, so before any reply is published), then each CONFIRM and VOID settles. Each settles in
   * a few MongoDB round trips: a long batch of them beats like the take phase, so a slow MongoDB
   * does not cost the partition its membership. WORKER_FENCED (a newer gen raised a fence) fails the batch.
   */
  async finish(batch: Batch, heartbeat: () => Promise<void>): Promise<void> {
    const later = batch.outcomes.flatMap((o, index) =>
      o.is === "later" && o.source === "gapless" ? [{ index, o, request: batch.requests[index] as IdRequest }] : [],
    );
    if (later.length === 0) return;
    const { gapless, clock } = this.#d;
    const fail = (x: (typeof later)[number], e: unknown) => {
      batch.outcomes[x.index] = refusal(failureOf(e), x.o.at);
    };
    if (!gapless) {
      for (const x of later) fail(x, new IddError("UNAVAILABLE", "this worker has no gapless numbering"));
      return;
    }
    const wants = new Map<number, GaplessWant>();
    for (const x of later) {
      if (x.request.settle) continue;
      const want = wantOf(x.request, x.o);
      if (want) wants.set(x.index, want);
      else fail(x, new IddError("INTERNAL", `sequence "${x.o.def.name}" is not gapless, and was planned to the gapless source`));
    }
    let taken: Awaited<ReturnType<GaplessSource["issue"]>> | undefined;
    try {
      // The batch's answers are recorded under the sequences' fences (I3): raise them first, so no
      // number is inserted by a worker that could not publish it.
      await this.#fence(batch, [...wants.values()]);
      taken = wants.size > 0 ? await gapless.issue([...wants.values()]) : new Map();
    } catch (e) {
      if (isIddError(e, "WORKER_FENCED")) throw e; // a newer issuer: nothing of the batch is published
      for (const x of later) if (wants.has(x.index)) fail(x, e);
    }
    const beat = paced(heartbeat, this.#d.heartbeatMs, clock);
    for (const x of later) {
      if (batch.outcomes[x.index] !== x.o) continue; // refused above
      const beating = beat(clock());
      if (beating) await beating;
      const { def, at } = x.o;
      const want = wants.get(x.index);
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
  async #fence(batch: Batch, wants: GaplessWant[]): Promise<void> {
    const { gen, partition, lease } = batch;
    if (gen === undefined) return;
    const names = new Set(wants.flatMap((w) => (lease.fenced.has(w.def.name) ? [] : [w.def.name])));
    for (const name of names) {
      // Redis unreachable: answered unrecorded (G3), and the fence is raised on a later step.
      const raised = await this.#d.redis.call(partition, () => this.#d.fence(name, gen).then(() => true));
      if (raised) lease.fenced.add(name);
    }
  }
}

/** What an ISSUE left later asks of the gapless source: `count` numbers of its counter, answered once per requestId. */
function wantOf(request: IdRequest, o: Later): GaplessWant | undefined {
  const def = gaplessDef(o.def);
  return def && { def, period: o.period, count: request.count, requestId: request.requestId, now: o.at };
}
