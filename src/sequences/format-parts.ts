/**
 * The part kinds of a format (format.ts): one table (KINDS) with, per kind, how its placeholders are
 * written and parsed, what it prints (its width or characters), how it prints for one request and how
 * its text is read back. A new kind is one entry there, one member of FormatPart, and nothing else.
 */

import { DATE_UNITS, type DateStrings, type DateUnit, isDateString } from "../core/date-parts.js";
import { IddError } from "../core/errors.js";
import { CHECK_ALGORITHMS, type CheckAlgorithm, checkAlgorithm, isCheckAlgorithmName } from "./check-digits.js";
import { MAX_OBFUSCATED_DIGITS, MIN_OBFUSCATED_DIGITS } from "./obfuscation/domain.js";

/** What a serial wider than `{seq:N}` does: refuse (SERIAL_OVERFLOW) or print all its digits. */
export const OVERFLOW_POLICIES = ["refuse", "widen"] as const;
export type OverflowPolicy = (typeof OVERFLOW_POLICIES)[number];

export const MAX_SEQ_WIDTH = 18;
export const DEFAULT_FIELD_LENGTH = 16;
export const MAX_FIELD_LENGTH = 64;
export const FIELD_NAME = /^[a-z][a-z0-9_]{0,31}$/;
export const FIELD_VALUE = /^[A-Za-z0-9]+$/;
/** Digits of the largest counter, 2^53 - 1 (MAX_COUNTER): the widest an unpadded or widened serial prints. */
export const MAX_SERIAL_DIGITS = 16;

/** Where a part came from: its 1-based position in the template and its text there. */
interface Origin {
  readonly at: number;
  readonly source: string;
}

export type FormatPart = Origin &
  (
    | { readonly kind: "literal"; readonly text: string }
    | { readonly kind: "date"; readonly unit: DateUnit }
    | { readonly kind: "seq"; readonly width: number | null; readonly obfuscated: boolean }
    | { readonly kind: "field"; readonly name: string; readonly maxLength: number }
    | { readonly kind: "check"; readonly algorithm: CheckAlgorithm }
  );
export type PartOf<K extends FormatPart["kind"]> = Extract<FormatPart, { kind: K }>;

/** What readValue reads back from a value: the serial, the fields and the date parts printed. */
export interface FormatReading {
  serial: bigint;
  fields: Record<string, string>;
  date: Partial<Record<DateUnit, string>>;
}

/**
 * One part bound to one request: fixed text, or text computed per serial, given the text printed
 * before it and that text's decimal digits (what a check reads).
 */
export type Segment = string | ((serial: bigint, before: string, digitsBefore: string) => string);

export interface Request {
  readonly date: DateStrings | null;
  readonly fields: Readonly<Record<string, string>>;
  readonly overflow: OverflowPolicy;
}

/**
 * What a part prints: `width` characters every time (placeholders: each one that `chars` matches), or
 * (width null) a run of 1 or more characters that `chars` matches, described by `prints` for problems.
 */
export type Shape =
  | { readonly width: number; readonly chars?: RegExp }
  | { readonly width: null; readonly chars: RegExp; readonly prints: string };

/** A part's text being read back: the whole value, where the part's text starts, what is read so far. */
interface ReadState {
  readonly value: string;
  readonly at: number;
  readonly out: FormatReading;
}

export interface PartKind<P extends FormatPart> {
  /** The words that open this kind's placeholders: `{word}` or `{word:arg:…}`. */
  readonly keywords: readonly string[];
  /** How to write it, for problems. */
  readonly usage: readonly string[];
  /** The part, or what is wrong with its arguments. */
  parse(keyword: string, args: string[]): Omit<P, keyof Origin> | string;
  /** Parts with the same label may appear only once; the label names them in problems. */
  once?(p: P): string;
  /** The template must have one. */
  readonly required?: boolean;
  /** It must be the template's last part. */
  readonly last?: boolean;
  /** Its segment reads digitsBefore: the renderer keeps them only for formats with such a part. */
  readonly readsDigits?: boolean;
  /** The longest text it prints (serials up to 2^53 - 1). */
  maxLength(p: P, overflow: OverflowPolicy): number;
  /** Its width, or (variable-width parts) the characters it prints. */
  shape(p: P, overflow: OverflowPolicy): Shape;
  bind(p: P, r: Request): Segment;
  /** Reads its text back into r.out; false if it never prints that text. */
  read(p: P, text: string, r: ReadState): boolean;
}

/** Echoes of user text in problems are kept short. */
export const show = (s: string) => (s.length > 40 ? `${s.slice(0, 40)}…` : s);
const noArgs = (keyword: string, args: string[]) => (args.length > 0 ? `{${keyword}} takes no arguments` : null);
const whole = (s: string, min: number, max: number): number | null => {
  if (!/^[0-9]{1,3}$/.test(s)) return null;
  const n = Number(s);
  return n >= min && n <= max ? n : null;
};

function overflowError(serial: bigint, width: number): IddError {
  return new IddError("SERIAL_OVERFLOW", `serial ${serial} does not fit {seq:${width}} (at most ${"9".repeat(width)})`);
}

const DIGIT = /[0-9]/;
const ALPHANUMERIC = /[A-Za-z0-9]/;
const ALL_DIGITS = /^[0-9]+$/;
const CHECK_CHARACTER = /[0-9X]/;

export const KINDS: { readonly [K in FormatPart["kind"]]: PartKind<PartOf<K>> } = {
  literal: {
    keywords: [],
    usage: [],
    parse: () => "not a placeholder",
    maxLength: (p) => p.text.length,
    shape: (p) => ({ width: p.text.length }),
    bind: (p) => p.text,
    read: (p, text) => text === p.text,
  },
  date: {
    keywords: DATE_UNITS,
    usage: DATE_UNITS.map((u) => `{${u}}`),
    parse: (keyword, args) => noArgs(keyword, args) ?? { kind: "date", unit: keyword as DateUnit },
    maxLength: (p) => p.unit.length,
    shape: (p) => ({ width: p.unit.length, chars: DIGIT }),
    bind: (p, r) => r.date?.[p.unit] ?? "",
    read: (p, text, { out: { date } }) => {
      // One instant: a unit printed twice prints the same, and yy is the end of yyyy.
      if (!isDateString(p.unit, text) || (date[p.unit] ?? text) !== text) return false;
      date[p.unit] = text;
      return date.yyyy === undefined || date.yy === undefined || date.yyyy.slice(2) === date.yy;
    },
  },
  seq: {
    keywords: ["seq", "obf"],
    usage: ["{seq}", "{seq:N}", "{obf:N}"],
    parse: (keyword, args) => {
      if (keyword === "obf") {
        const width = args.length === 1 ? whole(args[0] ?? "", MIN_OBFUSCATED_DIGITS, MAX_OBFUSCATED_DIGITS) : null;
        if (width !== null) return { kind: "seq", width, obfuscated: true };
        return `write {obf:N} with N a whole number from ${MIN_OBFUSCATED_DIGITS} to ${MAX_OBFUSCATED_DIGITS} (got "${show(args.join(":"))}")`;
      }
      if (args.length === 0) return { kind: "seq", width: null, obfuscated: false };
      const width = args.length === 1 ? whole(args[0] ?? "", 1, MAX_SEQ_WIDTH) : null;
      if (width !== null) return { kind: "seq", width, obfuscated: false };
      return `write {seq} or {seq:N} with N a whole number from 1 to ${MAX_SEQ_WIDTH} (got "${show(args.join(":"))}")`;
    },
    once: () => "the serial ({seq}, {seq:N} or {obf:N})",
    required: true,
    maxLength: (p, overflow) =>
      p.width === null ? MAX_SERIAL_DIGITS : overflow === "widen" && !p.obfuscated ? Math.max(p.width, MAX_SERIAL_DIGITS) : p.width,
    // A serial never has more than MAX_SERIAL_DIGITS digits: {seq:16} and wider never widen. An
    // obfuscated value always has exactly N digits.
    shape: (p, overflow) =>
      p.width !== null && (overflow === "refuse" || p.width >= MAX_SERIAL_DIGITS || p.obfuscated)
        ? { width: p.width, chars: DIGIT }
        : {
            width: null,
            chars: DIGIT,
            prints: p.width === null ? `1 to ${MAX_SERIAL_DIGITS} digits` : `${p.width} or more digits (overflow widen)`,
          },
    bind: (p, r) => {
      const width = p.width;
      if (width === null) return (serial) => serial.toString();
      return (serial) => {
        const s = serial.toString();
        if (s.length <= width) return s.padStart(width, "0");
        if (r.overflow === "widen" && !p.obfuscated) return s;
        throw overflowError(serial, width);
      };
    },
    read: (p, text, r) => {
      if (!ALL_DIGITS.test(text)) return false;
      const serial = BigInt(text);
      // Only what the serial prints: zero-padded to N, and no other leading zeros.
      if (serial.toString().padStart(p.width ?? 1, "0") !== text) return false;
      r.out.serial = serial;
      return true;
    },
  },
  field: {
    keywords: ["field"],
    usage: ["{field:name}", "{field:name:N}"],
    parse: (_, [name = "", max, ...rest]) => {
      const problems: string[] = [];
      if (!FIELD_NAME.test(name)) problems.push(`the field name must be a-z then up to 31 of a-z 0-9 _ (got "${show(name)}")`);
      const maxLength = max === undefined ? DEFAULT_FIELD_LENGTH : whole(max, 1, MAX_FIELD_LENGTH);
      if (maxLength === null)
        problems.push(`the maximum length must be a whole number from 1 to ${MAX_FIELD_LENGTH} (got "${show(max ?? "")}")`);
      if (rest.length > 0) problems.push("write {field:name} or {field:name:N}");
      return problems.length > 0 || maxLength === null ? problems.join("; ") : { kind: "field", name, maxLength };
    },
    once: (p) => `field "${p.name}"`,
    maxLength: (p) => p.maxLength,
    shape: (p) =>
      p.maxLength === 1
        ? { width: 1, chars: ALPHANUMERIC }
        : { width: null, chars: ALPHANUMERIC, prints: `1 to ${p.maxLength} characters of A-Z a-z 0-9` },
    bind: (p, r) => r.fields[p.name] ?? "",
    read: (p, text, r) => {
      if (text.length > p.maxLength || !FIELD_VALUE.test(text)) return false;
      r.out.fields[p.name] = text;
      return true;
    },
  },
  check: {
    keywords: ["check"],
    usage: ["{check:algorithm}"],
    parse: (_, args) => {
      const [name = ""] = args;
      if (args.length === 1 && isCheckAlgorithmName(name)) return { kind: "check", algorithm: checkAlgorithm(name) };
      return `write {check:algorithm} with one of ${CHECK_ALGORITHMS.join(", ")} (got "${show(args.join(":"))}")`;
    },
    once: () => "{check:…}",
    last: true,
    readsDigits: true,
    maxLength: (p) => p.algorithm.width,
    shape: (p) => ({ width: p.algorithm.width, chars: CHECK_CHARACTER }),
    bind: (p) => {
      const { algorithm } = p;
      return (_serial, _before, digits) => algorithm.compute(digits);
    },
    // What `idd check` accepts: for mod97-10 also the pairs 00 and 01 idd printed before (check-digits.ts).
    read: (p, text, r) => p.algorithm.validate(digitsOf(r.value.slice(0, r.at)) + text),
  },
};
const NON_DIGITS = /[^0-9]/g;
const ONLY_DIGITS = /^[0-9]*$/;
export const digitsOf = (text: string) => (ONLY_DIGITS.test(text) ? text : text.replace(NON_DIGITS, ""));

/** The table entry of a part, typed for any part. */
export const kindOf = (p: FormatPart) => KINDS[p.kind] as unknown as PartKind<FormatPart>;
export const BY_KEYWORD = new Map<string, PartKind<FormatPart>>(
  Object.values(KINDS).flatMap((k) => k.keywords.map((w) => [w, k as unknown as PartKind<FormatPart>] as const)),
);
export const PLACEHOLDER_USAGE = Object.values(KINDS)
  .flatMap((k) => k.usage)
  .join(", ");
