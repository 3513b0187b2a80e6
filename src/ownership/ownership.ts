/**
 * Partition ownership, in one place (G2, docs/design.md I3). A worker that starts answering a
 * request partition takes a gen for it (lua/takeOwner-2.lua): a number that only grows, made from
 * Redis time. Every sequence homed there is claimed and recorded under that gen only; per sequence,
 * Redis keeps the fence, the gen of its latest issuer: a claim raises it, and a batch's answers are
 * recorded (src/recording/) only while it still holds the recorder's gen. A worker that another
 * issuer superseded records and publishes nothing.
 *
 * Sequences live on their home partition, which depends on the request topic's partition count
 * (src/protocol/home-partition.ts). Gens are taken under the count the worker routes by, and Redis
 * keeps the largest such count: a worker routing by an outgrown count gets no gen (ROUTE_STALE)
 * until it has learnt the new count, and is fenced at its next record or claim of a sequence that
 * moved, once the sequence's new home claimed it.
 *
 * Each partition has one `PartitionLease` (partition-lease.ts). Whatever ends a lease's gen — the
 * partition lost in a rebalance, the topic grown, a fence, a new gen taken — is one `revoked` event:
 * the allocator drops the blocks of the lease's sequences, the steps forget what they delivered.
 */
import type { Instrumentation } from "../core/events.js";
import type { RedisClient } from "../redis/client-type.js";
import { OLD_LAYOUT, routeKey } from "../redis/keys.js";
import { Scripts } from "../redis/scripts.js";
import { PartitionLease, type RevokeWhy } from "./partition-lease.js";

/** A lease's gen ended: `sequences` were answered under it. */
export interface Revoked {
  partition: number;
  why: RevokeWhy;
  sequences: ReadonlySet<string>;
}

/** Hears every revoke; returns the unissued numbers it gave up, if any. */
export type RevokedListener = (r: Revoked) => bigint | undefined;

export class Ownership {
  readonly #redis: RedisClient;
  readonly #scripts: Scripts;
  readonly #topic: string;
  readonly #events: Instrumentation | undefined;
  readonly #leases = new Map<number, PartitionLease>();
  /** The partitions the consumer group gave this worker. */
  #assigned = new Set<number>();
  /** The request topic's partition count requests are routed by (routeBy). */
  #routedBy = 1;
  readonly #listeners = new Set<RevokedListener>();

  /** `scripts`: the scripts on `redis` (a fake in unit tests). */
  constructor(redis: RedisClient, topic: string, events?: Instrumentation, scripts = new Scripts(redis)) {
    this.#redis = redis;
    this.#scripts = scripts;
    this.#topic = topic;
    this.#events = events;
  }

  /** Subscribes to every revoke; returns the unsubscribe function. */
  onRevoked(listener: RevokedListener): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** The partition count requests are routed by. */
  get routedBy(): number {
    return this.#routedBy;
  }

  /** `partition`'s lease (unowned when new). */
  lease(partition: number): PartitionLease {
    let lease = this.#leases.get(partition);
    if (!lease) {
      lease = new PartitionLease(partition);
      this.#leases.set(partition, lease);
    }
    return lease;
  }

  /**
   * The worker's partitions are now `partitions`: the leases of the ones it lost are revoked
   * (`partition-lost`: their sequences' unissued blocks are dropped, I3) and forgotten. Returns the
   * lost partitions and the numbers given up.
   */
  assigned(partitions: number[]): { lost: number[]; dropped: bigint } {
    const now = new Set(partitions);
    const lost = [...this.#assigned].filter((p) => !now.has(p));
    let dropped = 0n;
    for (const p of lost) {
      dropped += this.revoke(this.lease(p), "partition-lost");
      this.#leases.delete(p);
    }
    this.#assigned = now;
    return { lost, dropped };
  }

  /**
   * The request topic's partition count is now `partitions`: sequences may have new home
   * partitions, so every lease is revoked (`partitions-grown`: every block dropped, every gen and
   * snowflake high mark forgotten); each partition is taken again under the new count, which fences
   * workers still routing by the old one (lua/takeOwner-2.lua). Returns the numbers given up.
   */
  routeBy(partitions: number): bigint {
    if (partitions === this.#routedBy) return 0n;
    this.#routedBy = partitions;
    let dropped = 0n;
    for (const lease of this.#leases.values()) {
      dropped += this.revoke(lease, "partitions-grown");
      lease.sequences.clear();
    }
    return dropped;
  }

  /**
   * The lease's gen under `partitions` (the request topic's partition count the worker routes by);
   * `taken` is true when it was taken now: what the lease held before is revoked (`retaken`: only
   * blocks claimed from now on are issued, and only snowflake ids above the last owner's). Throws
   * ROUTE_STALE when Redis holds a larger count.
   */
  async take(lease: PartitionLease, partitions: number): Promise<{ gen: number; taken: boolean }> {
    const held = lease.gen;
    if (held !== undefined && lease.ownedUnder(partitions)) return { gen: held, taken: false };
    const was = lease.taking();
    let gen: number;
    try {
      gen = await this.#scripts.takeOwner({ topic: this.#topic, partitions });
    } catch (e) {
      lease.untaken(was);
      throw e;
    }
    lease.owned(gen, partitions);
    this.#emit({ partition: lease.partition, why: "retaken", sequences: lease.sequences });
    this.#events?.emit("ownership.taken", { partition: lease.partition });
    return { gen, taken: true };
  }

  /**
   * A newer issuer fenced one of the lease's sequences (or Redis may have lost a fence): the gen is
   * revoked and the lease's sequences' blocks dropped; the partition is taken again at its next batch.
   */
  revoke(lease: PartitionLease, why: RevokeWhy): bigint {
    lease.revoked();
    return this.#emit({ partition: lease.partition, why, sequences: lease.sequences });
  }

  #emit(r: Revoked): bigint {
    let dropped = 0n;
    for (const l of this.#listeners) dropped += l(r) ?? 0n;
    return dropped;
  }

  /**
   * Raises `sequence`'s fence to `gen` without a claim: the first use under `gen` of a sequence that
   * takes no blocks (gapless; lua/fenceSnowflake-2.lua, which snowflakes use the same way). Throws
   * WORKER_FENCED when a newer gen holds it.
   */
  async fence(sequence: string, gen: number): Promise<void> {
    await this.#scripts.fenceSnowflake({ sequence, gen });
  }

  /** The largest partition count any owner routed by (0: none, or Redis lost it). */
  async partitionsInForce(): Promise<number> {
    return Number((await this.#redis.get(routeKey(this.#topic))) ?? 0);
  }

  /** Sets the count in force outright: only for a request topic created again with fewer partitions. */
  async setPartitionsInForce(partitions: number): Promise<void> {
    await this.#redis.set(routeKey(this.#topic), String(partitions));
  }

  /**
   * Fences workers of the release before per-sequence keys out (docs/design.md §5.15): their
   * partition count in force becomes `inf`, larger than any count they route by, so they neither
   * take partitions nor record (ROUTE_STALE); and their marker goes, so their claims fail closed.
   */
  async fenceOldWorkers(): Promise<void> {
    await this.#redis.set(OLD_LAYOUT.routeKey(this.#topic), "inf");
    await this.#redis.del(OLD_LAYOUT.markerKey);
  }
}
