/**
 * The dispenser: answers one request partition's accepted requests, in offset order, without
 * touching Kafka. Per batch it takes the partition's gen (ownership/, G2), then runs its phases over
 * one outcome per request (outcome.ts): take (each request planned, plan.ts, and its serials taken
 * from its definition's number source, sources/: counter blocks, snowflake ids, or left for later),
 * finish (each source answers what it left: gapless requests together, from MongoDB), record
 * (the answers under the gen, per sequence; answers recorded earlier replace the batch's own, G6:
 * issuing is optimistic, so a retry takes numbers that become a gap, G4, and the common step makes
 * one Redis round trip), and present (the replies). The worker around it consumes, parses, delivers
 * and commits.
 */
import type { Logger } from "pino";
import { stalled } from "../core/breaker.js";
import { IddError, isIddError } from "../core/errors.js";
import type { Instrumentation } from "../core/events.js";
import { rateLimited } from "../core/log.js";
import type { Range } from "../core/range.js";
import type { Hooks } from "../hooks/hooks.js";
import type { Ownership } from "../ownership/ownership.js";
import type { PartitionLease } from "../ownership/partition-lease.js";
import type { IdReply } from "../protocol/reply.js";
import type { IdRequest } from "../protocol/request.js";
import type { AnswerRecorder } from "../recording/answer-recorder.js";
import { routeStale } from "../redis/script-errors.js";
import type { StoredAnswer } from "../redis/stored-answer.js";
import type { SequenceCache } from "../sequences/cache.js";
import type { IssueLimits, KindContext, SequenceKind, SourceName } from "../sequences/kinds/kind.js";
import type { SequenceDef } from "../sequences/sequence-def.js";
import type { ReleaseWhy } from "../storage/releases.js";
import { reportCounts } from "./answer-counts.js";
import { type Batch, openBatch, paced } from "./batch.js";
import { hookRefusals, reportToHooks } from "./hook-calls.js";
import { type IssuanceTrail, writeTrail } from "./issuance-trail.js";
import { type Final, failureOf, type Outcome, present, refusal, tally } from "./outcome.js";
import { planOf, refusedEarly } from "./plan.js";
import { budgetSpent, mustWait, type PrepareDeps, prepareSources } from "./prepare.js";
import { RedisGuard } from "./redis-guard.js";
import type { Allocator } from "./sources/counter/allocator.js";
import { GaplessPhase } from "./sources/gapless/gapless-phase.js";
import type { GaplessSource } from "./sources/gapless/gapless-source.js";
import type { NumberSource } from "./sources/number-source.js";
import { ClockSource } from "./sources/snowflake/clock-source.js";
import type { SnowflakeIssuer } from "./sources/snowflake/issuer.js";

export interface DispenserDeps {
  allocator: Allocator;
  /** The partitions' leases: gens, the partition count routed by, the `revoked` event (G2, I3). */
  ownership: Ownership;
  /** Fenced records and recorded answers (G2, G6). */
  recorder: AnswerRecorder;
  sequences: SequenceCache;
  /** How often a long batch (waiting on Redis or MongoDB) calls `heartbeat`. */
  heartbeatMs: number;
  /** Past this long in a step, a request that would wait on MongoDB or Redis is answered UNAVAILABLE instead (prepare.ts). */
  stepBudgetMs: number;
  /** Redis commands time out after this: a failure that took twice as long is this process stalling. */
  redisTimeoutMs: number;
  /** Replies with more numbers than this carry no formatted strings (formattedOmitted). */
  maxFormatted: number;
  /** Issuance hooks (IDD_HOOKS); none when absent. */
  hooks?: Hooks;
  events?: Instrumentation;
  /** What kinds need at run time (the obfuscation keys). */
  kinds?: KindContext;
  /** Where the answers of audited sequences are written before they go out (issuance-trail.ts); none when absent. */
  issuance?: IssuanceTrail;
  /** Snowflake ids (kinds whose source is the clock); none when absent. */
  snowflakes?: SnowflakeIssuer;
  /** Numbers of gapless sequences, from MongoDB; absent: their requests are answered UNAVAILABLE. */
  gapless?: GaplessSource;
  clock: () => number;
  logger: Logger;
}

export class Dispenser {
  readonly #deps: DispenserDeps;
  readonly #log: Logger;
  readonly #limitedLog: ReturnType<typeof rateLimited>;
  readonly #redis: RedisGuard;
  readonly #sources: Record<SourceName, NumberSource>;
  /** What the head start and the step budget read: the definitions and the sources. */
  readonly #prepare: PrepareDeps;
  readonly #kinds: KindContext;
  readonly #limits: IssueLimits;
  readonly stats = { numbers: 0, deduped: 0, expired: 0 };

  constructor(deps: DispenserDeps) {
    this.#deps = deps;
    this.#log = deps.logger.child({ component: "dispenser" });
    this.#limitedLog = rateLimited(this.#log);
    this.#kinds = deps.kinds ?? {};
    this.#limits = { maxFormatted: deps.maxFormatted };
    this.#redis = new RedisGuard({
      redisTimeoutMs: deps.redisTimeoutMs,
      log: this.#log,
      ...(deps.events && { events: deps.events }),
    });
    const { gapless, ownership, heartbeatMs } = deps;
    const fence = (name: string, gen: number) => ownership.fence(name, gen);
    this.#sources = {
      counter: deps.allocator,
      clock: new ClockSource(deps.snowflakes, (partition, call) => this.#redis.call(partition, call)),
      gapless: new GaplessPhase({ gapless, fence, redis: this.#redis, heartbeatMs, clock: deps.clock }),
    };
    this.#prepare = { sequences: deps.sequences, sources: this.#sources };
    // A lease's gen ended: blocks claimed under it are never issued (I3).
    deps.ownership.onRevoked((r) => deps.allocator.dropSequences(r.sequences, r.why));
  }

  /**
   * One reply per request, in order: numbers, or an error with a stable code. The requests were
   * routed to `partition` by `partitions` (their sequences' home partition under that count);
   * ROUTE_STALE is thrown when the count changed meanwhile or Redis holds a larger one. The answers are
   * recorded under the partition's gen before this returns (G2), so they may be published;
   * a requestId answered before gets that answer again (G6). While Redis is unreachable, numbers
   * still come from blocks in memory (G3), unrecorded. Throws WORKER_FENCED when a newer issuer
   * took one of the batch's sequences over twice in a row, and when Redis or the broker fails the batch as a whole.
   */
  async answer(
    partition: number,
    requests: IdRequest[],
    heartbeat: () => Promise<void>,
    partitions = this.#deps.ownership.routedBy,
  ): Promise<IdReply[]> {
    const { ownership } = this.#deps;
    if (partitions !== ownership.routedBy) throw routeStale(partitions, ownership.routedBy);
    const lease = ownership.lease(partition);
    for (const r of requests) lease.sequences.add(r.sequence);
    try {
      return await this.#answer(lease, partitions, requests, heartbeat);
    } catch (e) {
      const fenced = isIddError(e, "WORKER_FENCED");
      if (!fenced && !stalled(e)) throw e;
      // A newer gen claimed one of the batch's sequences (or Redis may have lost its fence), or this
      // process stalled while Redis was asked (see RedisGuard): either this worker lost the partition
      // (then the heartbeat fails and nothing is published) or it still owns it (it takes a new gen,
      // e.g. after a Redis loss, or learns a grown partition count; or it was only slow).
      if (fenced) this.#log.warn({ partition, err: (e as Error).message }, "fenced: taking the partition again");
      else this.#log.warn({ partition, err: (e as Error).message }, "stalled while asking Redis: checking membership, then asking again");
      await heartbeat();
      return await this.#answer(lease, partitions, requests, heartbeat);
    }
  }

  /** The phases: take (each request planned, then taken from its source), finish (the sources'), record, trail, present. */
  async #answer(lease: PartitionLease, partitions: number, requests: IdRequest[], heartbeat: () => Promise<void>): Promise<IdReply[]> {
    const { clock, hooks } = this.#deps;
    const { ownership, recorder } = this.#deps;
    const lookUp = hooks?.refusing === true;
    const batch = await openBatch(lease, partitions, requests, { ownership, recorder, redis: this.#redis, lookUp });
    const refused = await hookRefusals(hooks, lease.partition, requests, (r) => batch.earlier.has(r) || r.settle !== undefined);
    const budgetEnds = performance.now() + this.#deps.stepBudgetMs; // monotonic: a wall clock step moves no budget
    await prepareSources(requests, batch, clock(), this.#prepare);
    try {
      await this.#takeAll(batch, refused, heartbeat, budgetEnds);
      for (const source of Object.values(this.#sources))
        if (source.finish) await source.finish(batch, heartbeat).catch((e: unknown) => this.#fenced(batch, e));
      await this.#record(batch); // Redis unreachable: published unrecorded
    } catch (e) {
      // The batch ends here, unsent: the numbers it took are given up (a fence refused its answers;
      // it stalled on Redis and is answered again; its partition went elsewhere while it ran).
      const why = isIddError(e, "WORKER_FENCED") || isIddError(e, "ROUTE_STALE") ? "fenced-batch" : "batch-abandoned";
      batch.outcomes.forEach((o, i) => {
        if (o.is === "issued") this.#release(requests[i] as IdRequest, o.answer, why);
      });
      throw e;
    }
    const audited = (s: string) => this.#deps.sequences.peek(s)?.audit === true;
    for (const r of await writeTrail(this.#deps.issuance, requests, batch.outcomes, audited, clock()))
      this.#releaseOf(r.sequence, r.period, [r], "unrecorded");
    const replies = batch.outcomes.map((o, i) => present(requests[i] as IdRequest, final(o), this.#kinds, this.#limits));
    const t = tally(requests, batch.outcomes);
    this.stats.numbers += t.numbers;
    this.stats.deduped += t.deduped;
    this.stats.expired += t.expired;
    reportCounts(this.#deps.events, lease.partition, replies, batch.outcomes);
    reportToHooks(hooks, lease.partition, requests, replies, batch.outcomes);
    return replies;
  }

  /** The take phase: each request of the batch planned and taken from its number source, in order, beating on the way. */
  async #takeAll(
    batch: Batch,
    refused: Map<IdRequest, string> | undefined,
    heartbeat: () => Promise<void>,
    budgetEnds: number,
  ): Promise<void> {
    const { clock } = this.#deps;
    const beat = paced(heartbeat, this.#deps.heartbeatMs, this.#deps.clock);
    for (const request of batch.requests) {
      const now = clock();
      const beating = beat(now);
      if (beating) await beating;
      let outcome: Outcome;
      try {
        if (performance.now() > budgetEnds && mustWait(request, batch, now, this.#prepare)) throw budgetSpent(this.#deps.stepBudgetMs);
        const taking = this.#take(batch, request, refused?.get(request), now);
        outcome = taking instanceof Promise ? await taking : taking;
      } catch (e) {
        if (isIddError(e, "WORKER_FENCED")) this.#fenced(batch, e);
        const f = failureOf(e);
        outcome = refusal(f, now);
        if (f.code === "UNAVAILABLE" || f.code === "INTERNAL")
          this.#limitedLog("warn", { sequence: request.sequence, code: f.code, message: f.message }, "request failed");
      }
      batch.outcomes.push(outcome);
    }
  }

  /** A claim or a fence found a newer issuer (or a fence Redis may have lost): the whole batch is fenced. */
  #fenced(batch: Batch, e: unknown): never {
    if (isIddError(e, "WORKER_FENCED")) this.#deps.ownership.revoke(batch.lease, "fenced");
    throw e;
  }

  /** The numbers of an answer taken for `request` and never sent, released for `why`. */
  #release(request: IdRequest, answer: StoredAnswer, why: ReleaseWhy): void {
    this.#releaseOf(request.sequence, answer.period, answer.ranges, why);
  }

  /** Numbers taken and never sent, released for `why` (recorded for audited sequences). */
  #releaseOf(sequence: string, period: string | null, ranges: readonly Range[], why: ReleaseWhy): void {
    const def = this.#deps.sequences.peek(sequence);
    if (def) this.#deps.allocator.release(def, period, ranges, why);
  }

  /**
   * One request's outcome: sent again, refused, or planned and taken from its number source. Throws
   * when taking fails; returns a promise only when it has to wait (a definition not cached, a claim),
   * so the common request costs no promise.
   */
  #take(batch: Batch, request: IdRequest, hookReason: string | undefined, now: number): Outcome | Promise<Outcome> {
    const before = batch.earlier.get(request);
    if (before) return this.#deduped(request, before, now);
    const early = refusedEarly(request, now, hookReason);
    if (early) return refusal(early, now);
    const def = this.#deps.sequences.peek(request.sequence);
    if (!def) return this.#deps.sequences.require(request.sequence).then((d) => this.#takeOf(batch, request, d, now));
    return this.#takeOf(batch, request, def, now);
  }

  /** `#take` once the sequence's definition is known. */
  #takeOf(batch: Batch, request: IdRequest, def: SequenceDef, now: number): Outcome | Promise<Outcome> {
    const plan = planOf(request, def, now, this.#kinds, this.#limits);
    if (plan.is !== "take") return plan;
    const { source, kind, period } = plan;
    const taken = this.#sources[source].take(request, def, period, batch);
    if (taken === "later") return { is: "later", source, def, period, at: now };
    if (!Array.isArray(taken)) return taken.then((serials) => this.#issued(batch, request, def, kind, period, serials, now));
    return this.#issued(batch, request, def, kind, period, taken, now);
  }

  /** What the reply carries, and what a retry gets again: the kind's numbers for the serials. */
  #issued(
    batch: Batch,
    request: IdRequest,
    def: SequenceDef,
    kind: SequenceKind,
    period: string | null,
    serials: Range[],
    now: number,
  ): Outcome {
    const ranges = kind.numbers ? kind.numbers(def, { ranges: serials, at: now }, this.#kinds) : serials;
    batch.sequences.add(request.sequence);
    return { is: "issued", def, answer: { period, ranges, at: now }, at: now };
  }

  /** An answer recorded earlier, sent again: the same numbers, printed as they were when issued. */
  async #deduped(request: IdRequest, answer: StoredAnswer, now: number): Promise<Outcome> {
    const { sequences } = this.#deps;
    const def = sequences.peek(request.sequence) ?? (await sequences.require(request.sequence));
    return { is: "deduped", def, answer, at: now };
  }

  /**
   * The record phase: the batch's answers recorded under its gen (G2), per sequence it issued, even
   * with nothing to keep (no requestIds): the record checks the fence. An answer recorded earlier for
   * the same requestId (a retry, or one that raced its first attempt) replaces this batch's own, whose
   * numbers are never published (a gap, G4). Keyed requests refused here are looked up alongside: a
   * retry gets its recorded answer even when it would fail now (past its deadline, MongoDB down; G6).
   */
  async #record(batch: Batch): Promise<void> {
    const { gen, partition, requests, outcomes } = batch;
    if (gen === undefined) return;
    const keyed = (i: number) => (requests[i] as IdRequest).requestId !== "";
    const issued = outcomes.flatMap((o, i) => (o.is === "issued" && keyed(i) ? [{ i, o }] : []));
    const failed = batch.lookedUp ? [] : outcomes.flatMap((o, i) => (o.is === "refused" && keyed(i) && !requests[i]?.settle ? [i] : []));
    const { recorder } = this.#deps;
    const answers = issued.map(({ i, o }) => ({
      sequence: (requests[i] as IdRequest).sequence,
      requestId: (requests[i] as IdRequest).requestId,
      answer: o.answer,
    }));
    let recorded: (StoredAnswer | undefined)[] | undefined;
    let found: (StoredAnswer | undefined)[] | undefined;
    try {
      [recorded, found] = await Promise.all([
        batch.sequences.size === 0
          ? undefined
          : this.#redis.call(partition, () => recorder.record(gen, batch.sequences, answers, batch.highs)),
        failed.length === 0 ? undefined : this.#redis.call(partition, () => recorder.lookup(failed.map((i) => requests[i] as IdRequest))),
      ]);
    } catch (e) {
      if (isIddError(e, "WORKER_FENCED") || isIddError(e, "ROUTE_STALE"))
        this.#deps.ownership.revoke(batch.lease, isIddError(e, "ROUTE_STALE") ? "partitions-grown" : "fenced");
      throw e;
    }
    recorded?.forEach((r, k) => {
      const { i, o } = issued[k] as (typeof issued)[number];
      if (!r) return;
      // A retry answered with its first numbers: the ones this batch took for it are never sent.
      this.#release(requests[i] as IdRequest, o.answer, "retry-replaced");
      this.#sendAgain(batch, i, r);
    });
    found?.forEach((r, k) => {
      if (r) this.#sendAgain(batch, failed[k] as number, r);
    });
  }

  /** Request `i` gets the answer recorded earlier for it. */
  #sendAgain(batch: Batch, i: number, answer: StoredAnswer): void {
    const def = this.#deps.sequences.peek((batch.requests[i] as IdRequest).sequence);
    batch.outcomes[i] = { is: "deduped", def, answer, at: this.#deps.clock() };
  }
}

/** An outcome the phases left final: a request still waiting for its source is a bug, answered INTERNAL rather than never. */
function final(o: Outcome): Final {
  return o.is === "later" ? refusal(new IddError("INTERNAL", `its ${o.source} source left the request unanswered`), o.at) : o;
}
