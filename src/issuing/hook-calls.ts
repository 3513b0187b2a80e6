/**
 * The issuance hooks around one batch (IDD_HOOKS): `before` may refuse requests not answered
 * earlier (retries are never refused); `issued` and `failed` observe the replies, off the reply path.
 */
import type { FailedEvent, IssuedEvent } from "../hooks/hook.js";
import type { Hooks } from "../hooks/hooks.js";
import type { IdReply } from "../protocol/reply.js";
import type { IdRequest } from "../protocol/request.js";
import type { Outcome } from "./outcome.js";

/** The `before` hooks' refusals (reasons) of the requests not answered earlier; undefined without hooks. */
export async function hookRefusals(
  hooks: Hooks | undefined,
  partition: number,
  requests: IdRequest[],
  answeredEarlier: (r: IdRequest) => boolean,
): Promise<Map<IdRequest, string> | undefined> {
  if (!hooks?.active) return undefined;
  const fresh = requests.filter((r) => !answeredEarlier(r));
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

/** Hands the batch's replies to the observing hooks, with whether each was sent again (its outcome). */
export function reportToHooks(
  hooks: Hooks | undefined,
  partition: number,
  requests: readonly IdRequest[],
  replies: readonly IdReply[],
  outcomes: readonly Outcome[],
): void {
  if (!hooks?.active) return;
  const issued: IssuedEvent[] = [];
  const failed: FailedEvent[] = [];
  replies.forEach((reply, i) => {
    const r = requests[i] as IdRequest;
    if (r.settle) return; // CONFIRM and VOID issue nothing
    // Copies: hooks get frozen events, and nothing of theirs may reach a reply.
    const at = Number(reply.issuedAt);
    const base = { sequence: r.sequence, requestId: r.requestId, count: r.count, fields: { ...r.fields }, partition, at };
    if (reply.error) failed.push({ ...base, code: reply.error.code, message: reply.error.message });
    else {
      const ranges = reply.ranges.map((x) => ({ first: x.first, last: x.last }));
      issued.push({ ...base, period: reply.period, ranges, formatted: [...reply.formatted], deduped: outcomes[i]?.is === "deduped" });
    }
  });
  hooks.issued(issued);
  hooks.failed(failed);
}
