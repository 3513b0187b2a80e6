/**
 * The dispenser: answers one request partition's accepted requests, in offset order, without
 * touching Kafka. It holds what issuing needs — the partition's owner token (G2), the dedupe store
 * (G6), the sequence definitions and their kinds, the counters — and returns one reply per request.
 * The worker around it consumes, parses, delivers and commits.
 */
import type { Logger } from "pino";
import type { Allocator } from "../allocation/allocator.js";
import { type ErrorCode, IddError, isIddError } from "../errors.js";
import type { FailedEvent, IssuedEvent } from "../hooks/hook.js";
import type { Hooks } from "../hooks/hooks.js";
import { rateLimited } from "../log.js";
import type { AnswerCount, Instrumentation } from "../ops/events.js";
import { errorReply, type IdReply, okReply, type Range } from "../protocol/reply.js";
import type { IdRequest } from "../protocol/request.js";
import type { SequenceCache } from "../sequences/cache.js";
import type { SequenceDef } from "../sequences/definition.js";
import type { KindContext } from "../sequences/kinds/kind.js";
import { kindOf } from "../sequences/kinds/table.js";
import { periodOf } from "../sequences/period.js";
import type { SnowflakeIssuer } from "../snowflake/issuer.js";
import { Breaker, stalled } from "../storage/breaker.js";
import { type Ownership, routeStale, type StoredAnswer } from "./ownership.js";

export interface DispenserDeps {
  allocator: Allocator;
  ownership: Ownership;
  sequences: SequenceCache;
  /** How often a long batch (waiting on Redis or MongoDB) calls `heartbeat`. */
  heartbeatMs: number;
  /** Redis commands time out after this: a failure that took twice as long is this process stalling. */
  redisTimeoutMs: number;
  /** Replies with more numbers than this carry no formatted strings (formattedOmitted). */
  maxFormatted: number;
  /** Issuance hooks (IDD_HOOKS); none when absent. */
  hooks?: Hooks;
  events?: Instrumentation;
  /** What kinds need at run time (the obfuscation keys). */
  kinds?: KindContext;
  /** Snowflake ids (kinds whose source is the clock); none when absent. */
  snowflakes?: SnowflakeIssuer;
  clock: () => number;
  logger: Logger;
}

/** The REDIS_* codes a reply keeps; the other REDIS_* codes are internal and become UNAVAILABLE. */
const KEPT_REDIS_CODES = new Set<string>(["REDIS_STATE_MISSING", "REDIS_STATE_LOST", "REDIS_FENCED"]);

/** Maps any failure while issuing numbers to a reply error. */
export function failureOf(e: unknown): IddError {
  if (isIddError(e)) {
    const code = KEPT_REDIS_CODES.has(e.code) || !e.code.startsWith("REDIS_") ? e.code : "UNAVAILABLE";
    return code === e.code ? e : new IddError(code as ErrorCode, e.message);
  }
  // Connection failures of Redis or MongoDB: G3 says an explicit error, never a guess.
  return new IddError("UNAVAILABLE", e instanceof Error ? e.message : String(e));
}

export class Dispenser {
  readonly #d: DispenserDeps;
  readonly #log: Logger;
  readonly #limitedLog: ReturnType<typeof rateLimited>;
  /** Sequences answered per partition: what to drop when the partition goes (I3). */
  readonly #seen = new Map<number, Set<string>>();
  /** Per partition, the snowflake sequences whose high mark this owner read since taking the token. */
  readonly #aboveHigh = new Map<number, Set<string>>();
  #assigned = new Set<number>();
  /** The request topic's partition count requests are routed by (routeBy). */
  #partitions = 1;
  /** Owner-token calls while Redis is unreachable: fail fast, one probe a second. */
  readonly #redisBreaker: Breaker;
  readonly stats = { numbers: 0, deduped: 0, expired: 0 };
  readonly #kinds: KindContext;

  constructor(d: DispenserDeps) {
    this.#d = d;
    this.#log = d.logger.child({ component: "dispenser" });
    this.#limitedLog = rateLimited(this.#log);
    this.#kinds = d.kinds ?? {};
    this.#redisBreaker = new Breaker({
      onChange: (open) => d.events?.emit("breaker.state", { what: "redis", open }),
      what: "Redis",
      retryMs: 1000,
      isFailure: (e) => !(e instanceof IddError),
      clock: d.clock,
      stallMs: 2 * d.redisTimeoutMs,
    });
  }

  /**
   * The worker's partitions are now `partitions`: for the ones it lost, the unissued blocks of their
   * sequences are dropped (I3) and their owner tokens forgotten. Returns the lost partitions and the
   * numbers given up.
   */
  assigned(partitions: number[]): { lost: number[]; dropped: bigint } {
    const now = new Set(partitions);
    const lost = [...this.#assigned].filter((p) => !now.has(p));
    const sequences = lost.flatMap((p) => [...(this.#seen.get(p) ?? [])]);
    for (const p of lost) {
      this.#seen.delete(p);
      this.#aboveHigh.delete(p);
      this.#d.ownership.forget(p);
    }
    this.#assigned = now;
    return { lost, dropped: this.#d.allocator.dropSequences(sequences) };
  }

  /**
   * The request topic's partition count is now `partitions`: sequences may have new home
   * partitions, so every block is dropped, every owner token forgotten and every snowflake high
   * mark read again; each partition is taken again under the new count, which fences workers still
   * routing by the old one (lua/takeOwner-2.lua). Returns the numbers given up.
   */
  routeBy(partitions: number): bigint {
    if (partitions === this.#partitions) return 0n;
    this.#partitions = partitions;
    this.#d.ownership.forgetAll();
    this.#aboveHigh.clear();
    const sequences = [...this.#seen.values()].flatMap((s) => [...s]);
    for (const s of this.#seen.values()) s.clear();
    return this.#d.allocator.dropSequences(sequences);
  }

  /**
   * One reply per request, in order: numbers, or an error with a stable code. The requests were
   * routed to `partition` by `partitions` (their sequences' home partition under that count);
   * ROUTE_STALE is thrown when the count changed meanwhile or Redis holds a larger one. The answers are
   * recorded under the partition's owner token before this returns (G2), so they may be published;
   * a requestId answered before gets that answer again (G6). While Redis is unreachable, numbers
   * still come from blocks in memory (G3), unrecorded. Throws WORKER_FENCED when another worker
   * owns the partition, and when Redis or the broker fails the batch as a whole.
   */
  async answer(
    partition: number,
    requests: IdRequest[],
    heartbeat: () => Promise<void>,
    partitions = this.#partitions,
  ): Promise<IdReply[]> {
    if (partitions !== this.#partitions) throw routeStale(partitions, this.#partitions);
    const seen = this.#seen.get(partition) ?? new Set<string>();
    this.#seen.set(partition, seen);
    for (const r of requests) seen.add(r.sequence);
    try {
      return await this.#answer(partition, partitions, requests, seen, heartbeat);
    } catch (e) {
      const fenced = isIddError(e, "WORKER_FENCED");
      if (!fenced && !stalled(e)) throw e;
      // Another worker took the partition's token, or this process stalled while Redis was asked
      // (see #owned): either this worker lost the partition (then the heartbeat fails and nothing is
      // published) or it still owns it (it took the token back after a Redis loss; or it was only slow).
      if (fenced) this.#log.warn({ partition }, "fenced: a newer owner holds this partition's token");
      else this.#log.warn({ partition, err: (e as Error).message }, "stalled while asking Redis: checking membership, then asking again");
      await heartbeat();
      return await this.#answer(partition, partitions, requests, seen, heartbeat);
    }
  }

  /**
   * Reports a step's answers per sequence and status (instrumentation). Numbers count once, when
   * issued: an answer sent again from the dedupe store (a retry, a redelivery) counts as a request
   * and a dedupe hit, not as numbers, so the pool's numbers_total is what clients were given.
   */
  #count(partition: number, replies: IdReply[], deduped: Set<number>): void {
    const events = this.#d.events;
    if (!events) return;
    const counts = new Map<string, AnswerCount>();
    replies.forEach((r, i) => {
      const status = r.error?.code ?? "OK";
      const key = `${r.sequence}\u0000${status}`;
      let c = counts.get(key);
      if (!c) {
        c = { sequence: r.sequence, status, requests: 0, numbers: 0 };
        counts.set(key, c);
      }
      c.requests++;
      if (!deduped.has(i)) for (const x of r.ranges) c.numbers += Number(x.last - x.first + 1n);
    });
    events.emit("dispenser.answered", { partition, counts: [...counts.values()], deduped: deduped.size });
  }

  async #answer(
    partition: number,
    partitions: number,
    requests: IdRequest[],
    seen: Set<string>,
    heartbeat: () => Promise<void>,
  ): Promise<IdReply[]> {
    const { allocator, ownership, sequences, clock } = this.#d;
    const t = await this.#owned(partition, () => ownership.token(partition, partitions));
    if (t?.taken) {
      allocator.dropSequences(seen); // only blocks claimed from now on are issued
      this.#aboveHigh.delete(partition); // and only snowflake ids above the last owner's
      this.#d.events?.emit("dispenser.token", { partition });
    }
    const token = t?.token;
    const keyed = requests.filter((r) => r.requestId !== "");
    const earlier = token === undefined ? [] : ((await this.#owned(partition, () => ownership.lookup(keyed))) ?? []);
    const known = new Map(keyed.map((r, i) => [r, earlier[i]]));
    const refused = await this.#before(partition, requests, known);
    const replies: IdReply[] = [];
    const deduped = new Set<number>();
    const issued: { index: number; request: IdRequest; answer: StoredAnswer }[] = [];
    /** The largest snowflake id answered per sequence: recorded with the answers, the next owner's floor. */
    const highs = new Map<string, bigint>();
    let beatAt = clock();
    for (const request of requests) {
      const now = clock();
      if (now - beatAt >= this.#d.heartbeatMs) {
        await heartbeat();
        beatAt = now;
      }
      const before = known.get(request);
      try {
        if (before) {
          replies.push(await this.#reply(request, before, now));
          deduped.add(replies.length - 1);
          this.stats.deduped++;
          continue;
        }
        if (request.deadline !== null && BigInt(now) > request.deadline) {
          this.stats.expired++;
          throw new IddError(
            "DEADLINE_EXCEEDED",
            `deadline ${request.deadline} passed ${now - Number(request.deadline)} ms before idd could answer`,
          );
        }
        const reason = refused?.get(request);
        if (reason !== undefined) throw new IddError("HOOK_REFUSED", reason);
        // Without awaiting when the definition is cached and the blocks in memory suffice.
        const def = sequences.peek(request.sequence) ?? (await sequences.require(request.sequence));
        const invalid = kindOf(def).refuse(def, request, this.#kinds);
        if (invalid) throw invalid;
        // A sequence whose reply carries a value per number (obfuscated) turns a count into that many
        // ranges, stored answers and bytes: bounded like formatted values, or a burst of large counts
        // would hold gigabytes in one step.
        if (def.obfuscation && request.count > this.#d.maxFormatted)
          throw new IddError(
            "INVALID_COUNT",
            `sequence "${def.name}" answers at most ${this.#d.maxFormatted} values a request (IDD_MAX_FORMATTED)`,
          );
        const period = periodOf(def, now);
        const kind = kindOf(def);
        let serials: Range[];
        if (kind.source === "clock") {
          serials = await this.#snowflakes(partition, def, request.count);
          const last = serials.at(-1)?.last;
          if (last !== undefined && last > (highs.get(def.name) ?? -1n)) highs.set(def.name, last);
        } else {
          const counter = allocator.counter(def, period);
          serials = counter.takeNow(request.count) ?? (await counter.take(request.count));
        }
        // What the reply carries, and what a retry gets again: the kind's numbers for the serials.
        const ranges = kind.numbers ? kind.numbers(def, { ranges: serials, at: now }, this.#kinds) : serials;
        const answer = { period, ranges, at: now };
        replies.push(this.#present(def, request, answer, now));
        if (request.requestId !== "") issued.push({ index: replies.length - 1, request, answer });
        this.stats.numbers += request.count;
      } catch (e) {
        const f = failureOf(e);
        replies.push(errorReply(request.requestId, request.sequence, f, now));
        if (f.code === "UNAVAILABLE" || f.code === "INTERNAL")
          this.#limitedLog("warn", { sequence: request.sequence, code: f.code, message: f.message }, "request failed");
      }
    }
    // Recorded even with nothing to keep (no requestIds): the record checks the token (G2).
    const fresh = replies.some((r, i) => r.status === "OK" && !deduped.has(i));
    if (token === undefined || !fresh) return this.#after(partition, requests, replies, deduped);
    let recorded: (StoredAnswer | undefined)[] | undefined;
    try {
      recorded = await this.#owned(partition, () =>
        ownership.record(
          partition,
          token,
          partitions,
          issued.map((x) => ({ sequence: x.request.sequence, requestId: x.request.requestId, answer: x.answer })),
          highs,
        ),
      );
    } catch (e) {
      if (isIddError(e, "WORKER_FENCED") || isIddError(e, "ROUTE_STALE")) allocator.dropSequences(seen);
      throw e;
    }
    recorded?.forEach((r, i) => {
      if (!r) return;
      // Answered meanwhile by another worker (a retry raced its first attempt): send that answer.
      const { index, request } = issued[i] as (typeof issued)[number];
      const def = sequences.peek(request.sequence);
      const now = clock();
      replies[index] = def ? this.#present(def, request, r, now) : okReply(request.requestId, request.sequence, r.period, r.ranges, now);
      deduped.add(index);
      this.stats.deduped++;
    });
    return this.#after(partition, requests, replies, deduped); // recorded undefined: Redis unreachable, published unrecorded
  }

  /** The `before` hooks' refusals of the requests not answered earlier (retries are never refused). */
  async #before(partition: number, requests: IdRequest[], known: Map<IdRequest, unknown>): Promise<Map<IdRequest, string> | undefined> {
    const hooks = this.#d.hooks;
    if (!hooks?.active) return undefined;
    const fresh = requests.filter((r) => !known.get(r));
    const reasons = await hooks.before(
      fresh.map((r) => ({ sequence: r.sequence, requestId: r.requestId, count: r.count, fields: r.fields, partition })),
    );
    const refused = new Map<IdRequest, string>();
    fresh.forEach((r, i) => {
      const reason = reasons[i];
      if (reason !== undefined) refused.set(r, reason);
    });
    return refused;
  }

  /** Counts the step's answers and hands them to the observing hooks (they run off the reply path); returns the replies. */
  #after(partition: number, requests: IdRequest[], replies: IdReply[], deduped: Set<number>): IdReply[] {
    this.#count(partition, replies, deduped);
    const hooks = this.#d.hooks;
    if (!hooks?.active) return replies;
    const issued: IssuedEvent[] = [];
    const failed: FailedEvent[] = [];
    replies.forEach((reply, i) => {
      const r = requests[i] as IdRequest;
      // Copies: hooks get frozen events, and nothing of theirs may reach a reply.
      const at = Number(reply.issuedAt);
      const base = { sequence: r.sequence, requestId: r.requestId, count: r.count, fields: { ...r.fields }, partition, at };
      if (reply.error) failed.push({ ...base, code: reply.error.code, message: reply.error.message });
      else {
        const ranges = reply.ranges.map((x) => ({ first: x.first, last: x.last }));
        issued.push({ ...base, period: reply.period, ranges, formatted: [...reply.formatted], deduped: deduped.has(i) });
      }
    });
    hooks.issued(issued);
    hooks.failed(failed);
    return replies;
  }

  /**
   * Snowflake ids. The first take of a sequence since this worker took the partition's token starts
   * above the largest id the partition's earlier owners recorded (G2 across a failover, whatever the
   * clocks: a clock behind it waits a little or answers CLOCK_BACKWARDS). Redis unreachable: read next time.
   */
  async #snowflakes(partition: number, def: SequenceDef, count: number): Promise<Range[]> {
    const issuer = this.#d.snowflakes;
    if (!issuer) throw new IddError("INTERNAL", `sequence "${def.name}" is a snowflake sequence, and this dispenser issues none`);
    let above = this.#aboveHigh.get(partition);
    if (!above) {
      above = new Set();
      this.#aboveHigh.set(partition, above);
    }
    if (!above.has(def.name)) {
      const read = await this.#owned(partition, async () => ({ high: await this.#d.ownership.high(def.name) }));
      if (read?.high !== undefined) await issuer.raiseFloor(def, read.high);
      if (read) above.add(def.name);
    }
    return issuer.take(def, count);
  }

  /** An answer recorded earlier, as a reply: the same numbers, printed as they were when issued. */
  async #reply(request: IdRequest, answer: StoredAnswer, now: number): Promise<IdReply> {
    const { sequences } = this.#d;
    const def = sequences.peek(request.sequence) ?? (await sequences.require(request.sequence));
    return this.#present(def, request, answer, now);
  }

  /** The reply for issued numbers: the kind prints them (up to maxFormatted numbers). */
  #present(def: SequenceDef, request: IdRequest, answer: StoredAnswer, now: number): IdReply {
    const kind = kindOf(def);
    const issued = { ranges: answer.ranges, at: answer.at ?? now };
    const prints = def.format !== null || def.obfuscation !== null;
    const omitted = prints && request.count > this.#d.maxFormatted;
    const formatted = omitted ? [] : kind.present(def, issued, request, this.#kinds);
    return okReply(request.requestId, request.sequence, answer.period, answer.ranges, now, formatted, omitted);
  }

  /**
   * An owner-token call (take, look up, record). Undefined when Redis is unreachable: then the batch
   * is answered from blocks in memory, unrecorded, and for a second no batch waits for Redis again
   * (one probes it). WORKER_FENCED is thrown, and so is a failure that came from this process
   * being stopped while the call was out: a worker stopped past its session may have lost the
   * partition, and answering unrecorded would publish behind the new owner (G2). The batch fails
   * instead; when it is tried again, Redis is asked again (and fences it, if it lost the partition).
   */
  async #owned<T>(partition: number, call: () => Promise<T>): Promise<T | undefined> {
    const wasDown = this.#redisBreaker.open;
    try {
      return await this.#redisBreaker.run(call);
    } catch (e) {
      if (!isIddError(e, "UNAVAILABLE") || stalled(e)) throw e;
      if (!wasDown) this.#log.warn({ err: e.message, partition }, "Redis unreachable: answering from blocks in memory, unrecorded");
      return undefined;
    }
  }
}
