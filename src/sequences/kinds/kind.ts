/**
 * What a sequence kind decides, as one entry of the kind table (table.ts): which settings a
 * definition of the kind takes and their defaults, where its numbers come from, and what a reply
 * carries besides the numbers. Everything else — owner tokens, dedupe, allocation, the wire — is
 * the same for every kind. Adding a kind is adding a module here and a line to the table.
 */
import { IddError } from "../../errors.js";
import type { Range } from "../../protocol/reply.js";
import type { LayoutInput, SnowflakeLayout } from "../../snowflake/layout.js";
import type { SequenceDef } from "../definition.js";
import type { OverflowPolicy } from "../format.js";
import type { ObfuscationKeys } from "../obfuscation/keys.js";
import type { Period } from "../period.js";

/** The kind-specific part of a definition as given (by `idd seq create/update`); unset means default. */
export interface KindInput {
  timeZone?: string | null;
  period?: string;
  format?: string | null;
  overflow?: string;
  /** Obfuscated sequences: width of the values, and the key version new values are encoded with. */
  digits?: number | string;
  keyVersion?: number | string;
  /** Snowflake sequences: `epoch=…,unitMs=…,timeBits=…,workerBits=…,seqBits=…` or the fields themselves. */
  layout?: string | LayoutInput;
}

/** The kind-specific part of a stored definition. */
export interface KindSettings {
  /** IANA time zone periods (and printed dates) are computed in; null when the kind uses none. */
  timeZone: string | null;
  /** When numbers restart at `start`. */
  period: Period;
  /** The template numbers are printed with (src/sequences/format.ts); null for kinds that print none. */
  format: string | null;
  /** What a serial wider than the template's `{seq:N}` does (formatted kinds). */
  overflow: OverflowPolicy;
  /** Obfuscated kinds: the width of the values and the current key version; null for the others. */
  obfuscation: { digits: number; keyVersion: number } | null;
  /** Snowflake kinds: the bit layout of the ids; null for the others. */
  snowflake: SnowflakeLayout | null;
}

/** What kinds need at run time besides the definition: the obfuscation keys, when configured. */
export interface KindContext {
  obfuscation?: ObfuscationKeys;
}

/** What a request brings besides its count. */
export interface RequestInput {
  fields: Readonly<Record<string, string>>;
}

/** Numbers one request was given: the ranges, and the instant they were issued at. */
export interface Issued {
  ranges: Range[];
  at: number;
}

export interface SequenceKind {
  readonly name: string;
  /** One line for `--help` and the README. */
  readonly summary: string;
  /**
   * Where numbers come from: `counter`, blocks of one Redis counter per (sequence, period); `clock`,
   * snowflake ids made in memory from the time and a leased worker id (src/snowflake/).
   */
  readonly source: "counter" | "clock";
  /**
   * Checks the kind's settings, collecting problems instead of throwing, and fills in defaults.
   * `existing` is the stored definition on an update: settings that would break uniqueness cannot change.
   */
  settings(input: KindInput, existing: KindSettings | undefined, problems: string[]): KindSettings;
  /** The largest number the settings can print, when below the counters' limit: caps `maxValue`. */
  limit?(settings: KindSettings): bigint | null;
  /** Why a request cannot be answered, checked before any number is issued for it. */
  refuse(def: SequenceDef, request: RequestInput, ctx: KindContext): IddError | undefined;
  /**
   * The reply's numbers for the issued serials (the serials themselves when absent). They are what
   * the dedupe store keeps, so a retry gets them again even after the settings changed.
   */
  numbers?(def: SequenceDef, issued: Issued, ctx: KindContext): Range[];
  /** The reply's `formatted` strings for its numbers (issued.ranges), one per number in issue order; none for kinds that print nothing. */
  present(def: SequenceDef, issued: Issued, request: RequestInput, ctx: KindContext): string[];
}

/** Settings of kinds that print no format. */
export const UNFORMATTED = { format: null, overflow: "refuse", obfuscation: null, snowflake: null } as const;

/** `refuse` of kinds that print no format: a request must not bring fields. */
export function noFields(def: SequenceDef, request: RequestInput): IddError | undefined {
  const names = Object.keys(request.fields);
  if (names.length === 0) return undefined;
  return new IddError("BAD_FIELDS", `sequence "${def.name}" prints no fields (it has no format); got ${names.slice(0, 5).join(", ")}`);
}

export function validTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-CA", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The time zone of a kind that computes dates: given, kept, or UTC; problems when it is not IANA. */
export function zoneSetting(input: KindInput, existing: KindSettings | undefined, problems: string[]): string {
  const tz = (input.timeZone === undefined ? existing?.timeZone : input.timeZone) ?? "UTC";
  if (!validTimeZone(tz)) problems.push(`timeZone "${tz}" is not an IANA time zone`);
  return tz;
}

/** Every kind-specific setting: a kind refuses those it does not take. */
const KIND_SETTINGS: readonly (keyof KindInput)[] = ["timeZone", "period", "format", "overflow", "digits", "keyVersion", "layout"];

/** Settings other than `takes` must not be given. */
export function refuseSettings(kind: string, input: KindInput, takes: (keyof KindInput)[], problems: string[]): void {
  for (const n of KIND_SETTINGS) {
    if (!takes.includes(n) && input[n] !== undefined && input[n] !== null) problems.push(`${n} does not apply to ${kind} sequences`);
  }
}
