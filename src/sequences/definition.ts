/** Sequence definitions: the checks every definition passes (its types are in sequence-def.ts). */
import { IddError } from "../core/errors.js";
import { SEQUENCE_NAME } from "../protocol/request.js";
import type { KindInput, SequenceKind } from "./kinds/kind.js";
import { KINDS } from "./kinds/table.js";
import { GRANT_LOG_MODES, type GrantLogMode, isKindName, KIND_NAMES, MAX_COUNTER, type SequenceDef } from "./sequence-def.js";

export {
  type DailyDef,
  type FormattedDef,
  GRANT_LOG_MODES,
  type GrantLogMode,
  MAX_COUNTER,
  type MonotonicDef,
  type ObfuscatedDef,
  type SequenceDef,
  type SnowflakeDef,
} from "./sequence-def.js";

export interface SequenceInput extends KindInput {
  name: string;
  kind?: string;
  start?: bigint | number | string;
  maxValue?: bigint | number | string;
  grantLog?: string;
  /** Record answered numbers for `idd audit` (a strict grant log with it). */
  audit?: boolean;
}

function toBig(v: bigint | number | string | undefined, field: string, problems: string[]): bigint | undefined {
  if (v === undefined) return undefined;
  try {
    if (typeof v === "string" && !/^-?\d+$/.test(v.trim())) throw new Error();
    return BigInt(typeof v === "string" ? v.trim() : v);
  } catch {
    problems.push(`${field} must be an integer, got "${v}"`);
    return undefined;
  }
}

/** Checks a new definition (or an existing one with changes applied); reports every problem at once. */
export function defineSequence(input: SequenceInput, now: Date, existing?: SequenceDef): SequenceDef {
  const problems: string[] = [];
  if (!SEQUENCE_NAME.test(input.name))
    problems.push(`name must be 1-64 characters of A-Z a-z 0-9 . _ - (got "${input.name.slice(0, 80)}")`);
  const kindName = input.kind ?? existing?.kind ?? "monotonic";
  const kind = isKindName(kindName) ? kindName : "monotonic";
  if (!isKindName(kindName)) problems.push(`kind must be one of ${KIND_NAMES.join(", ")} (got "${input.kind}")`);
  if (existing && kind !== existing.kind) problems.push("kind cannot change");
  const module: SequenceKind = KINDS[kind];
  const settings = module.settings(input, existing?.kind === kind ? existing : undefined, problems);
  const limit = module.limit?.(settings) ?? MAX_COUNTER;
  const start = toBig(input.start, "start", problems) ?? existing?.start ?? 1n;
  const givenMax = toBig(input.maxValue, "maxValue", problems);
  const maxValue = givenMax ?? existing?.maxValue ?? (limit < MAX_COUNTER ? limit : MAX_COUNTER);
  if (limit < MAX_COUNTER && maxValue > limit)
    problems.push(`maxValue ${maxValue} does not fit the format (at most ${limit}); set overflow widen or print a wider {seq:N}`);
  if (start < 0n) problems.push("start must be ≥ 0");
  if (maxValue > MAX_COUNTER) problems.push(`maxValue must be ≤ ${MAX_COUNTER} (2^53 - 1)`);
  if (maxValue < start) problems.push("maxValue must be ≥ start");
  if (existing && start !== existing.start) problems.push("start cannot change once numbers may have been issued");
  const audit = input.audit ?? existing?.audit ?? false;
  // An audited sequence logs every block before use: a relaxed block its worker was killed with
  // would be missing from the log, and its numbers could not be explained.
  const grantLog = (input.grantLog ?? (audit ? "strict" : undefined) ?? existing?.grantLog ?? "relaxed") as GrantLogMode;
  if (!GRANT_LOG_MODES.includes(grantLog)) problems.push(`grantLog must be one of ${GRANT_LOG_MODES.join(", ")} (got "${input.grantLog}")`);
  if (audit && grantLog !== "strict") problems.push("an audited sequence needs grantLog strict (its blocks must be logged before use)");
  if (audit && module.source !== "counter") problems.push(`audit applies to sequences with a counter, not to ${kind} ones`);
  if (audit && settings.obfuscation) problems.push("audit does not apply to obfuscated values (answers are recorded as serials)");
  if (problems.length > 0) throw new IddError("SEQUENCE_INVALID", `sequence "${input.name.slice(0, 80)}":\n${problems.join("\n")}`);
  // The settings are those of `kind` (its module made them): the definition is of that kind.
  return {
    name: input.name,
    kind,
    start,
    maxValue,
    ...settings,
    grantLog,
    grantLogSince: existing && existing.grantLog === grantLog ? existing.grantLogSince : now,
    audit,
    auditSince: audit ? (existing?.audit ? existing.auditSince : now) : null,
    createdAt: existing?.createdAt ?? now,
    updatedAt: now,
  } as SequenceDef;
}
