/**
 * Where a request's serials come from, by its definition's source (`sourceOf`, sequences/kinds/):
 * `counter/`, blocks of the sequence's Redis counter; `snowflake/`, ids made from the clock;
 * `gapless/`, numbers of MongoDB, one document each. The dispenser calls every source alike,
 * without knowing the kind: `take` for each request in the batch's order, then `finish` once,
 * after the take phase and before the record, for a source that answers a batch's requests
 * together (gapless: one MongoDB insert per counter) and left them `later`. A cold step readies
 * them first (`prepare`, prepare.ts).
 */
import type { Range } from "../../core/range.js";
import type { IdRequest } from "../../protocol/request.js";
import type { SequenceDef } from "../../sequences/sequence-def.js";
import type { Batch, BatchTake } from "../batch.js";

export interface NumberSource {
  /**
   * Serials for `request` of `def` in `period`: synchronous when they are in memory already, a
   * promise when the source has to wait, `"later"` when `finish` answers it. Throws when taking
   * fails (WORKER_FENCED: a newer gen holds the sequence, and the whole batch is fenced).
   */
  take(request: IdRequest, def: SequenceDef, period: string | null, batch: BatchTake): Range[] | Promise<Range[]> | "later";
  /** Answers the batch's requests it left later: each such outcome becomes issued, settled or refused. */
  finish?(batch: Batch, heartbeat: () => Promise<void>): Promise<void>;
  /**
   * A cold step's head start: readies `count` serials of `def` in `period` (a counter claims its
   * blocks), called for all the step's sequences at once before the take phase. Undefined when
   * nothing needs waiting for; never throws in earnest (failures show at the take).
   */
  prepare?(def: SequenceDef, period: string | null, count: number, batch: BatchTake): Promise<void> | undefined;
  /** Whether taking `count` serials of `def` now would wait on a service (a step past its budget refuses such requests). */
  mustWait?(def: SequenceDef, period: string | null, count: number, batch: BatchTake): boolean;
}
