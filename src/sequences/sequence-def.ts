/**
 * What a sequence is, as types: one definition type per kind, and `SequenceDef` their union on
 * `kind`. Each kind's type says which of the settings it uses; the settings of other kinds are
 * fixed (`null`, `"never"`, `"refuse"`), so a stored definition keeps one shape for every kind
 * (MongoDB's documents are unchanged) while the compiler knows, from `def.kind`, which settings a
 * definition has. This module holds types and constants only: the checks are in definition.ts and
 * the kinds' behaviour in kinds/.
 */

import type { Period } from "../core/period.js";
import type { OverflowPolicy } from "./format.js";
import type { SnowflakeLayout } from "./snowflake-layout.js";

/** The sequence kinds, in the order `--help` lists them (kinds/table.ts holds one module per name). */
export const KIND_NAMES = ["monotonic", "daily", "formatted", "obfuscated", "snowflake"] as const;
export type KindName = (typeof KIND_NAMES)[number];
export const isKindName = (name: string): name is KindName => (KIND_NAMES as readonly string[]).includes(name);

/**
 * How grants reach MongoDB. `relaxed`: appended in batches after use; replay restores a lost
 * counter to its reservation (a gap of up to the headroom). `strict`: each block is appended before
 * any of its numbers is used; replay restores to the highest grant (a gap of about zero), and claims
 * stop while MongoDB is down.
 */
export const GRANT_LOG_MODES = ["relaxed", "strict"] as const;
export type GrantLogMode = (typeof GRANT_LOG_MODES)[number];

/** Counters live in Redis as Lua numbers (doubles): exact below 2^53. */
export const MAX_COUNTER = 2n ** 53n - 1n;

/** The width of obfuscated values and the key version new values are encoded with. */
export interface ObfuscationSettings {
  digits: number;
  keyVersion: number;
}

/**
 * A gapless sequence's settings (docs/design.md, Gapless numbering): its numbers come from MongoDB,
 * one document each, and each must be confirmed or voided within `confirmTimeoutMs` of being issued,
 * else it is voided with reason `expired`.
 */
export interface GaplessSettings {
  confirmTimeoutMs: number;
}

/** The kinds a sequence may be gapless for: those whose serials are printed in order. */
export const GAPLESS_KINDS: readonly KindName[] = ["monotonic", "daily", "formatted"];
/** Ten minutes: how long a gapless number may stay pending unless the definition says otherwise. */
export const DEFAULT_CONFIRM_TIMEOUT_MS = 600_000;

/** The settings every kind has: none of them depends on the kind. */
export interface SequenceBase {
  name: string;
  /** First number (serial) of the sequence, of each period for those that restart. */
  start: bigint;
  /** Highest number (serial) ever issued, of each period; requests past it fail with SEQUENCE_EXHAUSTED. */
  maxValue: bigint;
  grantLog: GrantLogMode;
  /** When grantLog last changed: replay trusts strict grants only from then on. */
  grantLogSince: Date;
  /**
   * Whether answered numbers are recorded (MongoDB's `issuance`, once per batch before the replies
   * go out), so `idd audit` can tell every skipped number from an answered one. Implies a strict
   * grant log.
   */
  audit: boolean;
  /** When audit was last switched on: blocks claimed earlier can be audited only as whole blocks. */
  auditSince: Date | null;
  /** Set for a gapless sequence (numbers from MongoDB, confirmed or voided); null for every other. Fixed at creation. */
  gapless: GaplessSettings | null;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * The kind-specific settings, as stored. `timeZone`: the IANA zone periods (and printed dates) are
 * computed in; `period`: when numbers restart at `start`; `format`: the template numbers are printed
 * with (format.ts); `overflow`: what a serial wider than the template's `{seq:N}` does;
 * `obfuscation`: the width and key version of obfuscated values; `snowflake`: the bit layout of the ids.
 */
export interface KindSettings {
  timeZone: string | null;
  period: Period;
  format: string | null;
  overflow: OverflowPolicy;
  obfuscation: ObfuscationSettings | null;
  snowflake: SnowflakeLayout | null;
}

/** The settings of a kind that uses none of them. */
export interface NoSettings extends KindSettings {
  timeZone: null;
  period: "never";
  format: null;
  overflow: "refuse";
  obfuscation: null;
  snowflake: null;
}

/** One counter for ever, plain numbers. */
export interface MonotonicDef extends SequenceBase, NoSettings {
  kind: "monotonic";
}

/** Restarts every calendar day of its time zone; plain numbers. */
export interface DailyDef extends SequenceBase, Omit<NoSettings, "timeZone" | "period"> {
  kind: "daily";
  timeZone: string;
  period: "daily";
}

/** Printed by a template, restarting with a period; `obfuscation` when the template prints `{obf:N}`. */
export interface FormattedDef extends SequenceBase, Omit<NoSettings, "timeZone" | "period" | "format" | "overflow" | "obfuscation"> {
  kind: "formatted";
  timeZone: string;
  period: Period;
  format: string;
  overflow: OverflowPolicy;
  obfuscation: ObfuscationSettings | null;
}

/** FF1-encrypted serials. */
export interface ObfuscatedDef extends SequenceBase, Omit<NoSettings, "obfuscation"> {
  kind: "obfuscated";
  obfuscation: ObfuscationSettings;
}

/** 64-bit ids from the time, a leased worker id and a sequence within the time unit. */
export interface SnowflakeDef extends SequenceBase, Omit<NoSettings, "snowflake"> {
  kind: "snowflake";
  snowflake: SnowflakeLayout;
}

export type SequenceDef = MonotonicDef | DailyDef | FormattedDef | ObfuscatedDef | SnowflakeDef;

/** The definition type of one kind. */
export type DefOf<K extends KindName> = Extract<SequenceDef, { kind: K }>;

/** A definition whose values carry an obfuscated serial (obfuscated, or formatted printing `{obf:N}`). */
export type ObfuscatingDef = (ObfuscatedDef | FormattedDef) & { obfuscation: ObfuscationSettings };
