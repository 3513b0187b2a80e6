/**
 * One request partition's lease, as this worker holds it (docs/design.md I3): the gen it took the
 * partition under (lua/takeOwner-2.lua), the partition count it was taken under, the sequences it
 * answered there (what a revoke gives up) and those whose fence it raised to the gen. A small state
 * machine, changed only by `Ownership` (ownership.ts):
 *
 *   unowned ──take──▶ taking ──gen──▶ owned ──revoke──▶ revoked ──take──▶ taking …
 *                       └──Redis failed──▶ (back where it was)
 *
 * `owned` is the only state whose gen is used; a new gen (a take from `revoked`, or under another
 * partition count) revokes what the old one held first (`retaken`).
 */
import type { ReleaseWhy } from "../storage/releases.js";

export type LeaseState = "unowned" | "taking" | "owned" | "revoked";

/** Why a lease's sequences are given up: a subset of the release reasons (src/storage/releases.ts). */
export type RevokeWhy = Extract<ReleaseWhy, "partition-lost" | "partitions-grown" | "retaken" | "fenced">;

export class PartitionLease {
  readonly partition: number;
  #state: LeaseState = "unowned";
  #gen: number | undefined;
  #partitions: number | undefined;
  /** Sequences answered on this partition: their blocks are dropped when the lease is revoked. */
  readonly sequences = new Set<string>();
  /**
   * Sequences whose fence was raised to the gen without a claim: a snowflake's (its high mark read)
   * or a gapless one's. Emptied whenever the gen changes or is revoked, so each is fenced once per gen.
   */
  readonly fenced = new Set<string>();

  constructor(partition: number) {
    this.partition = partition;
  }

  get state(): LeaseState {
    return this.#state;
  }

  /** The gen while owned; undefined otherwise. */
  get gen(): number | undefined {
    return this.#state === "owned" ? this.#gen : undefined;
  }

  /** Whether the lease is owned under `partitions` (the partition count requests are routed by). */
  ownedUnder(partitions: number): boolean {
    return this.#state === "owned" && this.#partitions === partitions;
  }

  /** A take started; returns the state to go back to when it fails. */
  taking(): LeaseState {
    const was = this.#state;
    this.#state = "taking";
    return was;
  }

  /** A take failed (Redis unreachable, ROUTE_STALE): the lease is as it was. */
  untaken(was: LeaseState): void {
    if (this.#state === "taking") this.#state = was;
  }

  owned(gen: number, partitions: number): void {
    this.#state = "owned";
    this.#gen = gen;
    this.#partitions = partitions;
    this.fenced.clear();
  }

  revoked(): void {
    this.#state = "revoked";
    this.#gen = undefined;
    this.#partitions = undefined;
    this.fenced.clear();
  }
}
