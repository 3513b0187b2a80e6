/**
 * The plan of a request, before any number is issued for it: the checks it passes, in the order a
 * reply reports them (its deadline, the `before` hooks' refusal, then its sequence's kind: fields,
 * keys, and the kind's cap on the count), then where its numbers come from: the kind's number
 * source now, or the batch's gapless phase later. Pure: it reads the request, the clock's reading
 * and the definition.
 */
import { IddError } from "../core/errors.js";
import { periodOf } from "../core/period.js";
import type { IdRequest } from "../protocol/request.js";
import type { IssueLimits, KindContext, SequenceKind } from "../sequences/kinds/kind.js";
import { kindOf } from "../sequences/kinds/table.js";
import type { SequenceDef } from "../sequences/sequence-def.js";
import type { Outcome } from "./outcome.js";
import { gaplessDef } from "./sources/gapless/gapless-source.js";

/** Serials from the kind's number source, in `period`; or an outcome decided without them. */
export type Plan =
  | { readonly is: "take"; readonly kind: SequenceKind; readonly period: string | null }
  | Extract<Outcome, { is: "refused" | "later" }>;

/** A request's plan once its sequence's definition is known (refusedEarly passed). */
export function planOf(request: IdRequest, def: SequenceDef, now: number, ctx: KindContext, limits: IssueLimits): Plan {
  if (request.settle) return { is: "later", def, at: now };
  const kind = kindOf(def);
  const refused = refusedByKind(kind, def, request, ctx, limits);
  if (refused) return { is: "refused", error: refused, at: now };
  const period = periodOf(def, now);
  const g = gaplessDef(def);
  if (!g) return { is: "take", kind, period };
  return { is: "later", def, want: { def: g, period, count: request.count, requestId: request.requestId, now }, at: now };
}

/** Why a request is refused before its definition is read: its deadline passed, or a hook refused it. */
export function refusedEarly(request: IdRequest, now: number, hookReason: string | undefined): IddError | undefined {
  if (request.deadline !== null && BigInt(now) > request.deadline)
    return new IddError(
      "DEADLINE_EXCEEDED",
      `deadline ${request.deadline} passed ${now - Number(request.deadline)} ms before idd could answer`,
    );
  if (hookReason !== undefined) return new IddError("HOOK_REFUSED", hookReason);
  return undefined;
}

/** Why the sequence's kind refuses the request: its fields or keys, or a count above the kind's cap. */
export function refusedByKind(
  kind: SequenceKind,
  def: SequenceDef,
  request: IdRequest,
  ctx: KindContext,
  limits: IssueLimits,
): IddError | undefined {
  const invalid = kind.refuse(def, request, ctx);
  if (invalid) return invalid;
  const max = kind.maxCount?.(def, limits);
  if (max !== undefined && request.count > max)
    return new IddError("INVALID_COUNT", `sequence "${def.name}" answers at most ${max} values a request (IDD_MAX_FORMATTED)`);
  return undefined;
}
