/**
 * `obfuscated`: numbers with no visible rule. The counter issues serials 0, 1, 2, … as for any
 * sequence; the reply carries each serial encoded by FF1 under the sequence's current key version
 * (src/sequences/obfuscation/): a fixed-width number whose first digit is the key version. Unique
 * by construction (FF1 is a permutation; different key versions differ in the first digit), so a
 * key rotation cannot collide with values issued before it; never ordered and never revealing how
 * many were issued. The reply's `ranges` hold one single-number range per value, in issue order,
 * and `formatted` the same values as fixed-width strings. Key versions are 1-9, so no value starts
 * with a zero. The serials never restart (period never). Keys come from the worker's environment
 * (IDD_OBFUSCATION_KEYS or IDD_OBFUSCATION_KEYS_FILE), never from MongoDB.
 */
import { IddError } from "../../core/errors.js";
import type { Range } from "../../core/range.js";
import { MAX_OBFUSCATED_DIGITS, MIN_OBFUSCATED_DIGITS, type ObfuscatedDomain } from "../obfuscation/domain.js";
import type { ObfuscationKeys } from "../obfuscation/keys.js";
import type { ObfuscatedDef, ObfuscationSettings } from "../sequence-def.js";
import { type KindContext, type KindInput, NO_SETTINGS, noFields, refuseSettings, type SequenceKind } from "./kind.js";

/** A definition whose values carry an obfuscated serial: its name and obfuscation settings. */
export interface Obfuscating {
  name: string;
  obfuscation: ObfuscationSettings;
}

const DEFAULT_DIGITS = 10;

/** Domains per key set and (sequence, digits, version): building one sets up an AES key schedule per version. */
const domains = new WeakMap<ObfuscationKeys, Map<string, ObfuscatedDomain>>();

/** Why the sequence cannot encode here (no keys, or not its key version), or undefined: builds no domain. */
export function keyProblem(def: Obfuscating, ctx: KindContext): IddError | undefined {
  const o = def.obfuscation;
  const keys = ctx.obfuscation;
  if (keys?.has(o.keyVersion)) return undefined;
  const have = keys ? `the configured keys (${keys.origin}) are versions ${keys.versions.join(", ") || "none"}` : "no keys are configured";
  return new IddError("OBFUSCATION_KEY_MISSING", `sequence "${def.name}" encodes with key version ${o.keyVersion}; ${have}`);
}

/**
 * The sequence's domain, or why there is none (no keys, or not its key version). `context` goes into
 * the tweak (keys.ts): the printed dates of a formatted sequence's value. No context (undefined) and an
 * empty one are different tweaks (the name alone, and the name and a NUL), so they are cached apart.
 */
export function domainOf(def: Obfuscating, ctx: KindContext, context?: string): ObfuscatedDomain | IddError {
  const o = def.obfuscation;
  const keys = ctx.obfuscation;
  const problem = keyProblem(def, ctx);
  if (problem || !keys) return problem ?? new IddError("INTERNAL", `sequence "${def.name}" has no obfuscation keys`);
  let byKey = domains.get(keys);
  if (!byKey) {
    byKey = new Map();
    domains.set(keys, byKey);
  }
  const id = `${def.name}\u0000${o.digits}\u0000${o.keyVersion}${context === undefined ? "" : `\u0000${context}`}`;
  let d = byKey.get(id);
  if (!d) {
    // A formatted sequence printing seconds makes a domain a second: keep the recent ones only.
    if (byKey.size >= 1000) byKey.clear();
    d = keys.domain({ sequence: def.name, digits: o.digits, currentVersion: o.keyVersion, context });
    byKey.set(id, d);
  }
  return d;
}

function wholeSetting(name: string, v: number | string | undefined, fallback: number, lo: number, hi: number, problems: string[]): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < lo || n > hi) problems.push(`${name} must be a whole number from ${lo} to ${hi} (got "${v}")`);
  return Number.isInteger(n) ? n : fallback;
}

/** The key version new values are encoded with: given, kept, or 1. */
export function keyVersionSetting(input: KindInput, was: { keyVersion: number } | undefined, problems: string[]): number {
  return wholeSetting("keyVersion", input.keyVersion, was?.keyVersion ?? 1, 1, 9, problems);
}

/** The values of issued serials, one single-number range each, in issue order (numbers of the kinds that obfuscate). */
export function encodedRanges(def: Obfuscating, ranges: readonly Range[], ctx: KindContext, context?: string): Range[] {
  const domain = domainOf(def, ctx, context);
  if (domain instanceof IddError) throw domain;
  const serials: bigint[] = [];
  for (const r of ranges) for (let n = r.first; n <= r.last; n++) serials.push(n);
  return domain.encodeAll(serials).map((v) => ({ first: BigInt(v), last: BigInt(v) }));
}

export const obfuscated: SequenceKind<ObfuscatedDef> = {
  name: "obfuscated",
  summary: "numbers with no visible rule: FF1-encrypted serials, --digits wide (7-18, default 10), the first digit the --key-version (1-9)",
  source: "counter",
  prints: true,
  settings(input, existing, problems) {
    refuseSettings("obfuscated", input, ["digits", "keyVersion"], problems);
    const was = existing?.obfuscation;
    const digits = wholeSetting(
      "digits",
      input.digits,
      was?.digits ?? DEFAULT_DIGITS,
      MIN_OBFUSCATED_DIGITS,
      MAX_OBFUSCATED_DIGITS,
      problems,
    );
    if (was && digits !== was.digits) problems.push("digits cannot change once numbers may have been issued");
    const keyVersion = keyVersionSetting(input, was, problems);
    return { ...NO_SETTINGS, obfuscation: { digits, keyVersion } };
  },
  limit: (settings) => 10n ** BigInt(settings.obfuscation.digits - 1) - 1n,
  refuse: (def, request, ctx) => noFields(def, request) ?? keyProblem(def, ctx),
  // A value per number: bounded like formatted values, or a burst of large counts would hold gigabytes in one step.
  maxCount: (_def, limits) => limits.maxFormatted,
  numbers: (def, issued, ctx) => encodedRanges(def, issued.ranges, ctx),
  // The numbers are the values already (one per range); key versions 1-9: no leading zero to restore.
  present: (_def, issued) => issued.ranges.map((r) => r.first.toString()),
};
