/**
 * The plan of a request, before any number is issued for it: the checks it passes, in the order a
 * reply reports them (its deadline, the `before` hooks' refusal, then its sequence's kind: fields,
 * keys, and the kind's cap on the count), then where its numbers come from: the number source of
 * its definition (a CONFIRM or VOID: the gapless one). Pure: it reads the request, the clock's
 * reading and the definition.
 */
import { IddError } from "../core/errors.js";
import { periodOf } from "../core/period.js";
import type { IdRequest } from "../protocol/request.js";
import type { IssueLimits, KindContext, SequenceKind, SourceName } from "../sequences/kinds/kind.js";
import { kindOf, sourceOf } from "../sequences/kinds/table.js";
import type { SequenceDef } from "../sequences/sequence-def.js";
import type { Outcome } from "./outcome.js";

/** Serials from a number source, in `period`; or a refusal decided without them. */
export type Plan =
  | { readonly is: "take"; readonly source: SourceName; readonly kind: SequenceKind; readonly period: string | null }
  | Extract<Outcome, { is: "refused" }>;

/** A request's plan once its sequence's definition is known (refusedEarly passed). */
export function planOf(request: IdRequest, def: SequenceDef, now: number, ctx: KindContext, limits: IssueLimits): Plan {
  const kind = kindOf(def);
  // A CONFIRM or VOID settles gapless numbers (the gapless source refuses any other sequence's).
  if (request.settle) return { is: "take", source: "gapless", kind, period: request.settle.period };
  const refused = refusedByKind(kind, def, request, ctx, limits);
  if (refused) return { is: "refused", error: refused, at: now };
  return { is: "take", source: sourceOf(def), kind, period: periodOf(def, now) };
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
