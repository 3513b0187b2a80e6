/**
 * Snowflake ids as a number source, with the high marks that keep them above an earlier owner's.
 * The first take of a sequence since this worker took a partition's owner token starts above the
 * largest id the partition's earlier owners recorded (G2 across a failover, whatever the clocks: a
 * clock behind it waits a little or answers CLOCK_BACKWARDS). Each batch notes the largest id it
 * answered per sequence, recorded with its answers (lua/recordAnswers-n.lua): the next owner's floor.
 */
import { IddError } from "../core/errors.js";
import type { Range } from "../core/range.js";
import type { SequenceDef } from "../sequences/sequence-def.js";
import type { SnowflakeIssuer } from "./issuer.js";

/** A Redis call under the dispenser's failure policy: undefined when Redis is unreachable. */
export type GuardedCall = <T>(partition: number, call: () => Promise<T>) => Promise<T | undefined>;

export class ClockSource {
  readonly #issuer: SnowflakeIssuer | undefined;
  readonly #guarded: GuardedCall;
  /** Per partition, the sequences whose high mark this owner read since taking the token. */
  readonly #aboveHigh = new Map<number, Set<string>>();

  constructor(issuer: SnowflakeIssuer | undefined, guarded: GuardedCall) {
    this.#issuer = issuer;
    this.#guarded = guarded;
  }

  /** `count` ids of a snowflake sequence, above the recorded high mark; notes the batch's largest in `batch.highs`. */
  async take(
    def: SequenceDef,
    count: number,
    _period: string | null,
    batch: { partition: number; highs: Map<string, bigint> },
  ): Promise<Range[]> {
    const issuer = this.#issuer;
    if (!issuer || def.kind !== "snowflake")
      throw new IddError("INTERNAL", `sequence "${def.name}" is a snowflake sequence, and this dispenser issues none`);
    let above = this.#aboveHigh.get(batch.partition);
    if (!above) {
      above = new Set();
      this.#aboveHigh.set(batch.partition, above);
    }
    if (!above.has(def.name)) {
      // Redis unreachable: read next time.
      const read = await this.#guarded(batch.partition, async () => ({ high: await issuer.recordedHigh(def.name) }));
      if (read?.high !== undefined) await issuer.raiseFloor(def, read.high);
      if (read) above.add(def.name);
    }
    const ids = await issuer.take(def, count);
    const last = ids.at(-1)?.last;
    if (last !== undefined && last > (batch.highs.get(def.name) ?? -1n)) batch.highs.set(def.name, last);
    return ids;
  }

  /** The partition's token was taken (again) or the partition lost: only ids above the last owner's from now on. */
  forget(partition: number): void {
    this.#aboveHigh.delete(partition);
  }

  /** Every partition is taken again (a new partition count): every high mark is read again. */
  forgetAll(): void {
    this.#aboveHigh.clear();
  }
}
