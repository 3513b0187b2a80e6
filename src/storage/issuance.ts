/**
 * The `issuance` collection: the numbers answered for sequences that ask for an audit (definition
 * `audit`), written by the dispenser once per batch before the replies go out
 * (src/issuing/issuance-trail.ts): one record per run of consecutive numbers of one counter. With
 * the strict grant log such sequences keep, every number is then either answered (here) or given up
 * (a grant), which is what `idd audit` walks (src/audit/).
 */
import type { Long } from "mongodb";
import { fromInt64 } from "./int64.js";
import { RunCollection, runIndexes } from "./runs.js";
import type { Span } from "./windows.js";

export interface IssuanceRecord {
  sequence: string;
  period: string | null;
  first: bigint;
  last: bigint;
  /** When the batch was answered. */
  at: Date;
  worker: string;
}

export const ISSUANCE_INDEXES = runIndexes("issuance");

export class IssuanceRepository extends RunCollection<IssuanceRecord> {
  /** The lowest and highest number answered between `from` and `to` (times), when any. */
  async span(sequence: string, period: string | null, from: Date, to: Date): Promise<Span | undefined> {
    return this.connection.call("reads", async () => {
      const filter = { sequence, period, at: { $gte: from, $lt: to } };
      const [lo] = await this.docs
        .find(filter, { projection: { first: 1 } })
        .sort({ first: 1 })
        .limit(1)
        .toArray();
      const [hi] = await this.docs
        .find(filter, { projection: { last: 1 } })
        .sort({ last: -1 })
        .limit(1)
        .toArray();
      return lo && hi ? { first: fromInt64(lo.first as bigint | Long), last: fromInt64(hi.last as bigint | Long) } : undefined;
    });
  }
}
