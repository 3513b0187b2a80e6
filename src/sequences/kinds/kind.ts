/**
 * What a sequence kind decides, as one entry of the kind table (table.ts): which settings a
 * definition of the kind takes and their defaults, where its numbers come from, and what a reply
 * carries besides the numbers. Everything else — gens and fences, dedupe, allocation, the wire — is
 * the same for every kind. Adding a kind is adding a module here and a line to the table.
 */
import { IddError } from "../../core/errors.js";
import type { Range } from "../../core/range.js";
import type { ObfuscationKeys } from "../obfuscation/keys.js";
import type { DefOf, KindName, KindSettings, NoSettings, SequenceDef } from "../sequence-def.js";
import type { LayoutInput } from "../snowflake-layout.js";

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

/** Bounds every request is held to, from the worker's configuration. */
export interface IssueLimits {
  /** Replies with more numbers than this carry no formatted strings (IDD_MAX_FORMATTED). */
  maxFormatted: number;
}

/**
 * One kind's behaviour, for definitions of type `D` (sequence-def.ts). The table (table.ts) maps
 * each kind name to its module, so `kindOf(def)` is the module that knows `def`'s settings.
 */
export interface SequenceKind<D extends SequenceDef = SequenceDef> {
  readonly name: D["kind"];
  /** One line for `--help` and docs/sequences.md. */
  readonly summary: string;
  /**
   * Where numbers come from: `counter`, blocks of one Redis counter per (sequence, period); `clock`,
   * snowflake ids made in memory from the time and a leased worker id (src/issuing/sources/snowflake/).
   */
  readonly source: "counter" | "clock";
  /** Whether replies carry printed values (`formatted`); a reply with more than maxFormatted numbers omits them. */
  readonly prints: boolean;
  /**
   * Checks the kind's settings, collecting problems instead of throwing, and fills in defaults.
   * `existing` is the stored definition on an update: settings that would break uniqueness cannot change.
   */
  settings(input: KindInput, existing: D | undefined, problems: string[]): Pick<D, keyof KindSettings>;
  /** The largest number the settings can print, when below the counters' limit: caps `maxValue`. */
  limit?(settings: Pick<D, keyof KindSettings>): bigint | null;
  /** Why a request cannot be answered, checked before any number is issued for it. */
  refuse(def: D, request: RequestInput, ctx: KindContext): IddError | undefined;
  /**
   * The most numbers one request may ask for, when the kind bounds it: a kind whose reply carries a
   * value per number (a range each) turns a count into that many ranges, stored answers and bytes.
   */
  maxCount?(def: D, limits: IssueLimits): number | undefined;
  /**
   * The reply's numbers for the issued serials (the serials themselves when absent). They are what
   * the dedupe store keeps, so a retry gets them again even after the settings changed.
   */
  numbers?(def: D, issued: Issued, ctx: KindContext): Range[];
  /** The reply's `formatted` strings for its numbers (issued.ranges), one per number in issue order; none for kinds that print nothing. */
  present(def: D, issued: Issued, request: RequestInput, ctx: KindContext): string[];
}

/** The kind modules by name: each name's module handles that name's definitions. */
export type KindTable = { readonly [K in KindName]: SequenceKind<DefOf<K>> };

/** Settings of kinds that print no format. */
export const UNFORMATTED = { format: null, overflow: "refuse", obfuscation: null, snowflake: null } as const satisfies Partial<NoSettings>;

/** Settings of kinds that use none (neither dates nor a format). */
export const NO_SETTINGS: NoSettings = { timeZone: null, period: "never", ...UNFORMATTED };

/** `refuse` of kinds that print no format: a request must not bring fields. */
export function noFields(def: SequenceDef, request: RequestInput): IddError | undefined {
  if (isEmpty(request.fields)) return undefined;
  const names = Object.keys(request.fields);
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
export function zoneSetting(input: KindInput, existing: Pick<KindSettings, "timeZone"> | undefined, problems: string[]): string {
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

/** Whether an object has no own enumerable keys (without listing them). */
function isEmpty(o: object): boolean {
  for (const k in o) if (Object.hasOwn(o, k)) return false;
  return true;
}

/**
 * Where a definition's numbers come from (`sourceOf`): its kind's source, or `gapless`, MongoDB
 * one document per number (docs/design.md §7), for a sequence defined gapless whatever its kind.
 */
export type SourceName = SequenceKind["source"] | "gapless";
