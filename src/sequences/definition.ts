/** Sequence definitions: the checks every definition passes (its types are in sequence-def.ts). */
import { IddError } from "../core/errors.js";
import { SEQUENCE_NAME } from "../protocol/request.js";
import type { KindInput, SequenceKind } from "./kinds/kind.js";
import { KINDS } from "./kinds/table.js";
import {
  DEFAULT_CONFIRM_TIMEOUT_MS,
  GAPLESS_KINDS,
  type GaplessSettings,
  GRANT_LOG_MODES,
  type GrantLogMode,
  isKindName,
  KIND_NAMES,
  MAX_COUNTER,
  type SequenceDef,
} from "./sequence-def.js";

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
  /** Numbers from MongoDB, each confirmed or voided (docs/design.md, Gapless numbering); fixed at creation. */
  gapless?: boolean;
  /** How long a gapless number may stay pending: milliseconds, or `<n>ms|s|m|h|d` (default 10m). */
  confirmTimeout?: number | string;
}

/** The longest confirm timeout: 31 days (a pending number holds up nothing, but an invoice series should not wait a month). */
const MAX_CONFIRM_TIMEOUT_MS = 31 * 86_400_000;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `600000`, `600s`, `10m`, `1h` as milliseconds; undefined when it is none of these. */
export function durationMs(v: number | string): number | undefined {
  if (typeof v === "number") return Number.isInteger(v) ? v : undefined;
  const m = /^\s*(\d+)\s*(ms|s|m|h|d)?\s*$/.exec(v);
  return m ? Number(m[1]) * (UNIT_MS[m[2] ?? "ms"] as number) : undefined;
}

/**
 * The gapless settings: fixed at creation (a counter switched either way would repeat numbers or
 * leave the gaps its Redis blocks made), refused for kinds whose values hide their order.
 */
function gaplessSetting(
  input: SequenceInput,
  kind: SequenceDef["kind"],
  hasObf: boolean,
  existing: SequenceDef | undefined,
  problems: string[],
): GaplessSettings | null {
  const was = existing ? existing.gapless : null;
  const wanted = input.gapless ?? was !== null;
  if (existing && wanted !== (was !== null))
    problems.push(
      wanted
        ? "gapless cannot be switched on once numbers may have been issued: its Redis blocks left gaps already, and a gapless counter would start over at start (create a new sequence)"
        : "gapless cannot be switched off: a Redis counter would start at start again and repeat the numbers MongoDB holds",
    );
  if (!wanted) {
    if (input.confirmTimeout !== undefined) problems.push("confirmTimeout applies to gapless sequences only");
    return null;
  }
  if (!GAPLESS_KINDS.includes(kind) || hasObf)
    problems.push(
      `gapless does not apply to ${hasObf && kind === "formatted" ? "formatted sequences printing {obf:N}" : `${kind} sequences`}: their values hide the order a gapless series is read in (gapless kinds: ${GAPLESS_KINDS.join(", ")})`,
    );
  const given = input.confirmTimeout === undefined ? undefined : durationMs(input.confirmTimeout);
  if (input.confirmTimeout !== undefined && given === undefined)
    problems.push(`confirmTimeout must be milliseconds or <n>ms|s|m|h|d (got "${input.confirmTimeout}")`);
  const confirmTimeoutMs = given ?? was?.confirmTimeoutMs ?? DEFAULT_CONFIRM_TIMEOUT_MS;
  if (confirmTimeoutMs < 1000 || confirmTimeoutMs > MAX_CONFIRM_TIMEOUT_MS)
    problems.push(`confirmTimeout must be between 1s and 31d (got ${confirmTimeoutMs} ms)`);
  return { confirmTimeoutMs };
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
  const gapless = gaplessSetting(input, kind, settings.obfuscation !== null, existing?.kind === kind ? existing : undefined, problems);
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
    gapless,
    createdAt: existing?.createdAt ?? now,
    updatedAt: now,
  } as SequenceDef;
}
