/**
 * The dispenser: answers one request partition's accepted requests, in offset order, without
 * touching Kafka. Per batch it takes the partition's gen (ownership/, G2), then per request: the
 * plan's checks (plan.ts), serials from the kind's number source (counter blocks from allocation/,
 * or snowflake ids), the kind's numbers and print (presentation.ts); then it records the batch's
 * answers per sequence and sends answers recorded earlier instead of its own (G6): issuing is
 * optimistic, so a retry takes numbers that become a gap (G4), and the common step makes one Redis
 * round trip. The worker around it consumes, parses, delivers and commits.
 */
import type { Logger } from "pino";
import type { Allocator } from "../allocation/allocator.js";
import { stalled } from "../core/breaker.js";
import { IddError, isIddError } from "../core/errors.js";
import type { Instrumentation } from "../core/events.js";
import { rateLimited } from "../core/log.js";
import { periodOf } from "../core/period.js";
import type { Range } from "../core/range.js";
import type { Hooks } from "../hooks/hooks.js";
import type { Ownership } from "../ownership/ownership.js";
import type { PartitionLease } from "../ownership/partition-lease.js";
import { errorReply, type IdReply, okReply } from "../protocol/reply.js";
import type { IdRequest } from "../protocol/request.js";
import type { AnswerRecorder } from "../recording/answer-recorder.js";
import { routeStale } from "../redis/script-errors.js";
import type { StoredAnswer } from "../redis/stored-answer.js";
import type { SequenceCache } from "../sequences/cache.js";
import type { IssueLimits, KindContext, SequenceKind } from "../sequences/kinds/kind.js";
import { kindOf } from "../sequences/kinds/table.js";
import type { SequenceDef } from "../sequences/sequence-def.js";
import { ClockSource } from "../snowflake/clock-source.js";
import type { SnowflakeIssuer } from "../snowflake/issuer.js";
import type { ReleaseWhy } from "../storage/releases.js";
import { reportCounts } from "./answer-counts.js";
import { type Batch, openBatch, paced } from "./batch.js";
import { type GaplessSource, type GaplessWant, gaplessDef } from "./gapless-source.js";
import { hookRefusals, reportToHooks } from "./hook-calls.js";
import { type IssuanceTrail, writeTrail } from "./issuance-trail.js";
import { CounterSource, type NumberSource } from "./number-source.js";
import { refusedByKind, refusedEarly } from "./plan.js";
import { budgetSpent, mustWait, prepareClaims } from "./prepare.js";
import { failureOf, presented } from "./presentation.js";
import { RedisGuard } from "./redis-guard.js";

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
  readonly #sources: Record<SequenceKind["source"], NumberSource>;
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
    const clock = new ClockSource(deps.snowflakes, (partition, call) => this.#redis.call(partition, call));
    this.#sources = { counter: new CounterSource(deps.allocator), clock };
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

  /** Gen and earlier answers, each request through plan, source and presentation, then the record. */
  async #answer(lease: PartitionLease, partitions: number, requests: IdRequest[], heartbeat: () => Promise<void>): Promise<IdReply[]> {
    const { clock, hooks } = this.#deps;
    const { ownership, recorder } = this.#deps;
    const lookUp = hooks?.refusing === true;
    const batch = await openBatch(lease, partitions, requests, { ownership, recorder, redis: this.#redis, lookUp });
    const refused = await hookRefusals(hooks, lease.partition, requests, (r) => batch.earlier.has(r) || r.settle !== undefined);
    const budgetEnds = performance.now() + this.#deps.stepBudgetMs; // monotonic: a wall clock step moves no budget
    await prepareClaims(requests, batch, clock(), this.#deps);
    try {
      await this.#issueAll(batch, requests, refused, heartbeat, budgetEnds);
      if (batch.later.length > 0) await this.#gapless(batch, heartbeat).catch((e: unknown) => this.#fenced(batch, e));
      await this.#record(batch, requests); // Redis unreachable: published unrecorded
    } catch (e) {
      // The batch ends here, unsent: the numbers it took are given up (a fence refused its answers;
      // it stalled on Redis and is answered again; its partition went elsewhere while it ran).
      const why = isIddError(e, "WORKER_FENCED") || isIddError(e, "ROUTE_STALE") ? "fenced-batch" : "batch-abandoned";
      for (const x of batch.issued) this.#release(x.request.sequence, x.answer.period, x.answer.ranges, why);
      throw e;
    }
    const audited = (s: string) => this.#deps.sequences.peek(s)?.audit === true;
    for (const r of await writeTrail(this.#deps.issuance, batch.replies, audited, clock()))
      this.#release(r.sequence, r.period, [r], "unrecorded");
    reportCounts(this.#deps.events, batch.partition, batch.replies, batch.deduped, batch.settled);
    reportToHooks(hooks, batch.partition, requests, batch.replies, batch.deduped);
    return batch.replies;
  }

  /** Each request of the batch through plan, source and presentation, in order, beating on the way. */
  async #issueAll(
    batch: Batch,
    requests: IdRequest[],
    refused: Map<IdRequest, string> | undefined,
    heartbeat: () => Promise<void>,
    budgetEnds: number,
  ): Promise<void> {
    const { clock } = this.#deps;
    const beat = paced(heartbeat, this.#deps.heartbeatMs, this.#deps.clock);
    for (const request of requests) {
      const now = clock();
      const beating = beat(now);
      if (beating) await beating;
      try {
        if (performance.now() > budgetEnds && mustWait(request, batch, now, this.#deps)) throw budgetSpent(this.#deps.stepBudgetMs);
        const waiting = this.#issue(batch, request, refused?.get(request), now);
        if (waiting) await waiting;
      } catch (e) {
        if (isIddError(e, "WORKER_FENCED")) this.#fenced(batch, e);
        const f = failureOf(e);
        batch.replies.push(errorReply(request.requestId, request.sequence, f, now));
        if (f.code === "UNAVAILABLE" || f.code === "INTERNAL")
          this.#limitedLog("warn", { sequence: request.sequence, code: f.code, message: f.message }, "request failed");
      }
    }
  }

  /** A claim or a fence found a newer issuer (or a fence Redis may have lost): the whole batch is fenced. */
  #fenced(batch: Batch, e: unknown): never {
    if (isIddError(e, "WORKER_FENCED")) this.#deps.ownership.revoke(batch.lease, "fenced");
    throw e;
  }

  /** Numbers taken and never sent, released for `why` (recorded for audited sequences). */
  #release(sequence: string, period: string | null, ranges: readonly Range[], why: ReleaseWhy): void {
    const def = this.#deps.sequences.peek(sequence);
    if (def) this.#deps.allocator.release(def, period, ranges, why);
  }

  /**
   * One request's reply: sent again, or planned, taken from its number source and presented. Throws
   * when it fails; returns a promise only when it has to wait (a definition not cached, a claim),
   * so the common request costs no promise.
   */
  #issue(batch: Batch, request: IdRequest, hookReason: string | undefined, now: number): Promise<void> | undefined {
    const before = batch.earlier.get(request);
    if (before) return this.#sendEarlier(batch, request, before, now);
    const early = refusedEarly(request, now, hookReason);
    if (early?.code === "DEADLINE_EXCEEDED") this.stats.expired++;
    if (early) throw early;
    const def = this.#deps.sequences.peek(request.sequence);
    if (!def) return this.#deps.sequences.require(request.sequence).then((d) => this.#issueOf(batch, request, d, now));
    return this.#issueOf(batch, request, def, now);
  }

  /** `#issue` once the sequence's definition is known. */
  #issueOf(batch: Batch, request: IdRequest, def: SequenceDef, now: number): Promise<void> | undefined {
    if (request.settle) return this.#later(batch, request, def, now);
    const kind = kindOf(def);
    const refused = refusedByKind(kind, def, request, this.#kinds, this.#limits);
    if (refused) throw refused;
    const period = periodOf(def, now);
    const g = gaplessDef(def);
    if (g) return this.#later(batch, request, def, now, { def: g, period, count: request.count, requestId: request.requestId, now });
    const taken = this.#sources[kind.source].take(def, request.count, period, batch);
    if (!Array.isArray(taken)) return taken.then((serials) => this.#taken(batch, request, def, kind, period, serials, now));
    this.#taken(batch, request, def, kind, period, taken, now);
    return undefined;
  }

  /** What the reply carries, and what a retry gets again: the kind's numbers for the serials. */
  #taken(
    batch: Batch,
    request: IdRequest,
    def: SequenceDef,
    kind: SequenceKind,
    period: string | null,
    serials: Range[],
    now: number,
  ): void {
    const ranges = kind.numbers ? kind.numbers(def, { ranges: serials, at: now }, this.#kinds) : serials;
    this.#issued(batch, batch.replies.length, request, def, { period, ranges, at: now }, now);
  }

  async #sendEarlier(batch: Batch, request: IdRequest, before: StoredAnswer, now: number): Promise<void> {
    batch.replies.push(await this.#again(request, before, now));
    batch.deduped.add(batch.replies.length - 1);
    this.stats.deduped++;
  }

  /** An answer issued now, as the reply at `index`; what the batch records for its requestId. */
  #issued(batch: Batch, index: number, request: IdRequest, def: SequenceDef, answer: StoredAnswer, now: number): void {
    batch.replies[index] = presented(def, request, answer, now, this.#kinds, this.#limits);
    batch.sequences.add(request.sequence);
    if (request.requestId !== "") batch.issued.push({ index, request, answer });
    this.stats.numbers += request.count;
  }

  /** A gapless ISSUE (`want`), CONFIRM or VOID: its reply's place is kept and filled in by `#gapless`. */
  #later(batch: Batch, request: IdRequest, def: SequenceDef, now: number, want?: GaplessWant): undefined {
    const index = batch.replies.push(errorReply(request.requestId, request.sequence, new IddError("INTERNAL", "not answered"), now)) - 1;
    batch.later.push({ index, request, def, now, ...(want && { want }) });
  }

  /**
   * The batch's gapless requests: its ISSUEs take their numbers from MongoDB together (recorded
   * there before this returns, so before any reply is published), then each CONFIRM and VOID settles.
   * Each settles in a few MongoDB round trips: a long batch of them beats like the issuing loop, so
   * a slow MongoDB does not cost the partition its membership.
   */
  async #gapless(batch: Batch, heartbeat: () => Promise<void>): Promise<void> {
    const { gapless, clock } = this.#deps;
    const fail = (x: Batch["later"][number], e: unknown) => {
      batch.replies[x.index] = errorReply(x.request.requestId, x.request.sequence, failureOf(e), x.now);
    };
    if (!gapless) {
      for (const x of batch.later) fail(x, new IddError("UNAVAILABLE", "this worker has no gapless numbering"));
      return;
    }
    const wants = batch.later.flatMap((x) => (x.want ? [x.want] : []));
    let taken: Awaited<ReturnType<GaplessSource["issue"]>> | undefined;
    try {
      // The batch's answers are recorded under the sequences' fences (I3): raise them first, so no
      // number is inserted by a worker that could not publish it.
      await this.#fenceGapless(batch);
      taken = wants.length > 0 ? await gapless.issue(wants) : new Map();
    } catch (e) {
      if (isIddError(e, "WORKER_FENCED")) throw e; // a newer issuer: nothing of the batch is published
      for (const x of batch.later) if (x.want) fail(x, e);
    }
    const beat = paced(heartbeat, this.#deps.heartbeatMs, this.#deps.clock);
    for (const x of batch.later) {
      const beating = beat(clock());
      if (beating) await beating;
      if (x.want) {
        const t = taken?.get(x.want);
        if (t instanceof IddError) fail(x, t);
        else if (t) this.#issued(batch, x.index, x.request, x.def, t, x.now);
        continue;
      }
      try {
        const s = await gapless.settle(x.def, x.request.settle as NonNullable<IdRequest["settle"]>, x.now);
        batch.replies[x.index] = okReply(x.request.requestId, x.request.sequence, s.period, s.ranges, x.now);
        batch.settled.add(x.index);
      } catch (e) {
        fail(x, e);
      }
    }
  }

  /** Gapless sequences issued under the batch's gen take no blocks: their fences are raised here, once per gen. */
  async #fenceGapless(batch: Batch): Promise<void> {
    const { gen, partition, lease } = batch;
    if (gen === undefined) return;
    const names = new Set(batch.later.flatMap((x) => (x.want && !lease.fenced.has(x.request.sequence) ? [x.request.sequence] : [])));
    for (const name of names) {
      // Redis unreachable: answered unrecorded (G3), and the fence is raised on a later step.
      const raised = await this.#redis.call(partition, () => this.#deps.ownership.fence(name, gen).then(() => true));
      if (raised) lease.fenced.add(name);
    }
  }

  /**
   * Records the batch's answers under its gen (G2), per sequence it issued, even with nothing to keep
   * (no requestIds): the record checks the fence. An answer recorded earlier for the same requestId
   * (a retry, or one that raced its first attempt) replaces this batch's own, whose numbers are
   * never published (a gap, G4). Keyed requests that failed here are looked up alongside: a retry
   * gets its recorded answer even when it would fail now (past its deadline, MongoDB down; G6).
   */
  async #record(batch: Batch, requests: IdRequest[]): Promise<void> {
    const { gen, partition, issued } = batch;
    if (gen === undefined) return;
    const failed: { index: number; request: IdRequest }[] = [];
    if (!batch.lookedUp)
      batch.replies.forEach((reply, index) => {
        if (reply.error && reply.requestId !== "" && !requests[index]?.settle)
          failed.push({ index, request: requests[index] as IdRequest });
      });
    const { recorder } = this.#deps;
    const answers = issued.map((x) => ({ sequence: x.request.sequence, requestId: x.request.requestId, answer: x.answer }));
    let recorded: (StoredAnswer | undefined)[] | undefined;
    let found: (StoredAnswer | undefined)[] | undefined;
    try {
      [recorded, found] = await Promise.all([
        batch.sequences.size === 0
          ? undefined
          : this.#redis.call(partition, () => recorder.record(gen, batch.sequences, answers, batch.highs)),
        failed.length === 0 ? undefined : this.#redis.call(partition, () => recorder.lookup(failed.map((f) => f.request))),
      ]);
    } catch (e) {
      if (isIddError(e, "WORKER_FENCED") || isIddError(e, "ROUTE_STALE"))
        this.#deps.ownership.revoke(batch.lease, isIddError(e, "ROUTE_STALE") ? "partitions-grown" : "fenced");
      throw e;
    }
    recorded?.forEach((r, i) => {
      const x = issued[i] as (typeof issued)[number];
      // A retry answered with its first numbers: the ones this batch took for it are never sent.
      if (r) this.#release(x.request.sequence, x.answer.period, x.answer.ranges, "retry-replaced");
      this.#sendAgain(batch, x, r);
    });
    found?.forEach((r, i) => {
      this.#sendAgain(batch, failed[i] as (typeof failed)[number], r);
    });
  }

  /** Replaces reply `index` by the answer recorded earlier for its request, if any. */
  #sendAgain(batch: Batch, { index, request }: { index: number; request: IdRequest }, answer: StoredAnswer | undefined): void {
    if (!answer) return;
    if (batch.replies[index]?.error?.code === "DEADLINE_EXCEEDED") this.stats.expired--; // late, and answered after all
    const def = this.#deps.sequences.peek(request.sequence);
    const now = this.#deps.clock();
    batch.replies[index] = def
      ? presented(def, request, answer, now, this.#kinds, this.#limits)
      : okReply(request.requestId, request.sequence, answer.period, answer.ranges, now);
    batch.deduped.add(index);
    this.stats.deduped++;
  }

  /** An answer recorded earlier, as a reply: the same numbers, printed as they were when issued. */
  async #again(request: IdRequest, answer: StoredAnswer, now: number): Promise<IdReply> {
    const { sequences } = this.#deps;
    const def = sequences.peek(request.sequence) ?? (await sequences.require(request.sequence));
    return presented(def, request, answer, now, this.#kinds, this.#limits);
  }
}
