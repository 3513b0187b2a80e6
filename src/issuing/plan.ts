/**
 * The checks a request passes before any number is issued for it, in the order a reply reports
 * them: its deadline, the `before` hooks' refusal, then its sequence's kind (fields, keys, and the
 * kind's cap on the count). Pure: they read the request, the clock's reading and the definition.
 */
import { IddError } from "../core/errors.js";
import type { IdRequest } from "../protocol/request.js";
import type { IssueLimits, KindContext, SequenceKind } from "../sequences/kinds/kind.js";
import type { SequenceDef } from "../sequences/sequence-def.js";

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
