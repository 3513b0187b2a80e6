/**
 * `idd:history`: an issuance history in MongoDB (collection `issuance`): one record per answered
 * request — sequence, period, requestId, ranges, time, worker — appended in batches off the reply
 * path. An observer: while MongoDB is down, records wait in a bounded buffer (beyond it the oldest
 * are dropped and counted); numbers are issued regardless.
 */
import { AppendLog } from "../../storage/append-log.js";
import type { IssuanceRecord } from "../../storage/issuance.js";
import type { HookContext, IssuanceHook } from "../hook.js";

export function historyHook(ctx: HookContext): IssuanceHook {
  const log = new AppendLog<IssuanceRecord>((batch) => ctx.store.appendIssuance(batch), {
    flushMs: 500,
    maxBatch: 1000,
    maxBuffered: 100_000,
    onError: (e, buffered) =>
      ctx.logger.warn({ err: (e as Error).message, buffered }, "history hook: appending failed; kept for the next flush"),
  });
  return {
    name: "idd:history",
    after(e) {
      log.push({
        sequence: e.sequence,
        period: e.period,
        requestId: e.requestId,
        ranges: e.ranges.map((r) => ({ first: r.first, last: r.last })),
        at: new Date(e.at),
        deduped: e.deduped,
        worker: ctx.worker,
      });
    },
    close: () => log.flush(),
  };
}
