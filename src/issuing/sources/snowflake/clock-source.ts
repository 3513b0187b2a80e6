/**
 * Snowflake ids as a number source (../number-source.ts), with the high marks that keep them above an earlier issuer's.
 * The first take of a sequence under a gen raises the sequence's fence to it, as a claim does for a
 * counter (lua/fenceSnowflake-2.lua, design I3; noted in the partition's lease, src/ownership/, which
 * forgets it whenever the gen changes or is revoked), and starts above the largest id earlier issuers
 * recorded (G2 across a failover, whatever the clocks: a clock behind it waits a little or answers
 * CLOCK_BACKWARDS). Each batch notes the largest id it answered per sequence, recorded with its
 * answers (lua/recordAnswers-n.lua): the next issuer's floor.
 */
import { IddError } from "../../../core/errors.js";
import type { Range } from "../../../core/range.js";
import type { IdRequest } from "../../../protocol/request.js";
import type { SequenceDef } from "../../../sequences/sequence-def.js";
import type { BatchTake } from "../../batch.js";
import type { NumberSource } from "../number-source.js";
import type { SnowflakeIssuer } from "./issuer.js";

/** A Redis call under the dispenser's failure policy: undefined when Redis is unreachable. */
export type GuardedCall = <T>(partition: number, call: () => Promise<T>) => Promise<T | undefined>;

export class ClockSource implements NumberSource {
  readonly #issuer: SnowflakeIssuer | undefined;
  readonly #guarded: GuardedCall;

  constructor(issuer: SnowflakeIssuer | undefined, guarded: GuardedCall) {
    this.#issuer = issuer;
    this.#guarded = guarded;
  }

  /** `count` ids of a snowflake sequence, above the recorded high mark; notes the batch's largest in `batch.highs`. */
  async take(request: IdRequest, def: SequenceDef, _period: string | null, batch: BatchTake): Promise<Range[]> {
    const issuer = this.#issuer;
    if (!issuer || def.kind !== "snowflake")
      throw new IddError("INTERNAL", `sequence "${def.name}" is a snowflake sequence, and this dispenser issues none`);
    const { gen, lease } = batch;
    if (gen !== undefined && !lease.fenced.has(def.name)) {
      // Redis unreachable: fenced next time. WORKER_FENCED (a newer gen fenced it) fails the batch.
      const read = await this.#guarded(lease.partition, async () => ({ high: await issuer.fence(def.name, gen) }));
      if (read?.high !== undefined) await issuer.raiseFloor(def, read.high);
      if (read) lease.fenced.add(def.name);
    }
    const ids = await issuer.take(def, request.count);
    const last = ids.at(-1)?.last;
    if (last !== undefined && last > (batch.highs.get(def.name) ?? -1n)) batch.highs.set(def.name, last);
    return ids;
  }
}
