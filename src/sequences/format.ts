/**
 * Formats: a small template language that turns a serial into a formatted serial number.
 *
 *   {yyyy}{MM}{dd}{seq:5}               2026112200001
 *   QJ{seq:6}                           QJ000001
 *   {field:area}-{field:unit}-{seq:5}   010-6541-00001   (fields area=010, unit=6541)
 *   INV-{yy}{MM}-{seq:6}{check:damm}    INV-2611-0000013
 *
 * Parts:
 * - literal text: anything outside braces; `{{` and `}}` print `{` and `}`; no control characters.
 * - `{yyyy} {yy} {MM} {dd} {HH} {mm} {ss}`: the request's instant in the sequence's IANA time zone,
 *   24-hour clock. Date parts may repeat.
 * - `{seq}` / `{seq:N}`: the serial, zero-padded to N digits (N 1-18). A serial wider than N is refused
 *   (SERIAL_OVERFLOW, the default policy) or printed whole (policy `widen`).
 * - `{obf:N}`: the serial obfuscated (src/sequences/obfuscation/domain.ts): N digits (N 7-18), the key
 *   version then N - 1 digits of FF1, for serials 0 to 10^(N-1) - 1. The sequence kind encodes and passes
 *   the value where a serial goes (renderer, readValue's `serial`); this module only prints and reads it.
 *   A template has exactly one of `{seq}`, `{seq:N}`, `{obf:N}`.
 * - `{field:name}` / `{field:name:N}`: a value the request supplies. name: `[a-z][a-z0-9_]{0,31}`;
 *   value: 1 to N characters of A-Z a-z 0-9 (N 1-64, default 16). Each field appears at most once (so one
 *   name has one maximum length); a request must supply every field of the template and no other.
 * - `{check:algorithm}`: check characters (see check-digits.ts) over every decimal digit printed before
 *   it; letters and separators are ignored. At most one, and it must be the last part.
 *
 * Values are unique per sequence. The serial is unique per period and the template prints the period's
 * date, so a value is unique if its serial and fields can be read back from it: readValue does, left to
 * right without backtracking, and parseFormat refuses every template where it could not.
 * - Fixed-width parts print the same number of characters every time: literals, date parts (years
 *   0000-9999), `{seq:N}` under policy refuse, `{check:…}`, and the degenerate `{field:name:1}` and
 *   `{seq:N}` with N ≥ 16 under widen (no serial has more digits). Variable-width parts: fields (1 to N
 *   of A-Z a-z 0-9), `{seq}` and `{seq:N}` under policy widen (1 or more digits).
 * - The rule: every variable-width part is followed by fixed-width parts up to either the end of the
 *   template, or a literal character that neither the part nor the placeholders between can print
 *   (after a field: outside A-Z a-z 0-9; after `{seq}`: not a digit, unless a `{field:name:1}` comes
 *   first). The part's text ends at the fixed suffix, or at the first such character less the widths
 *   between. One problem per part that breaks it.
 * - Refused: `{field:a}{seq}` (a=1 serial 23 and a=12 serial 3 both print 123), `{field:a}{seq:3}{field:b}`,
 *   `{seq}{field:a}`. Accepted: `{field:a}-{seq}`, `{field:a}{seq:3}`, `{field:a}{yyyy}{MM}-{seq}`,
 *   `{seq}X{field:a}`.
 * - Widths depend on the policy, so a template is checked for one (parseFormat's option, kept in
 *   ParsedFormat.overflow and the default of formatterFor and readValue); valid under widen implies valid
 *   under refuse, and formatterFor refuses to widen a format that is ambiguous when widened.
 *
 * The part kinds are one table (KINDS): a new kind is one entry there, one member of FormatPart, and
 * nothing else.
 */

import { DATE_UNITS, type DateStrings, type DateUnit, dateStrings, isDateString } from "../core/date-parts.js";
import { IddError } from "../core/errors.js";
import { CHECK_ALGORITHMS, type CheckAlgorithm, checkAlgorithm, isCheckAlgorithmName } from "./check-digits.js";
import { MAX_OBFUSCATED_DIGITS, MIN_OBFUSCATED_DIGITS } from "./obfuscation/domain.js";

export { DATE_UNITS, type DateStrings, type DateUnit, dateStrings };

/** What a serial wider than `{seq:N}` does: refuse (SERIAL_OVERFLOW) or print all its digits. */
export const OVERFLOW_POLICIES = ["refuse", "widen"] as const;
export type OverflowPolicy = (typeof OVERFLOW_POLICIES)[number];

export const MAX_TEMPLATE_LENGTH = 256;
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
type PartOf<K extends FormatPart["kind"]> = Extract<FormatPart, { kind: K }>;

export interface ParsedFormat {
  readonly template: string;
  readonly parts: readonly FormatPart[];
  /** N of `{seq:N}` or `{obf:N}`; null for `{seq}`. */
  readonly seqWidth: number | null;
  /** The serial is printed obfuscated (`{obf:N}`): the renderer takes values, readValue returns them. */
  readonly obfuscated: boolean;
  /** The request fields, in template order, with their maximum lengths. */
  readonly fields: ReadonlyMap<string, number>;
  /** The date units the template prints (what finestPeriod reads). */
  readonly dateUnits: ReadonlySet<DateUnit>;
  readonly check: CheckAlgorithm | null;
  /** The overflow policy the template was checked for (widths depend on it). */
  readonly overflow: OverflowPolicy;
}

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
type Segment = string | ((serial: bigint, before: string, digitsBefore: string) => string);

interface Request {
  readonly date: DateStrings | null;
  readonly fields: Readonly<Record<string, string>>;
  readonly overflow: OverflowPolicy;
}

/**
 * What a part prints: `width` characters every time (placeholders: each one that `chars` matches), or
 * (width null) a run of 1 or more characters that `chars` matches, described by `prints` for problems.
 */
type Shape =
  | { readonly width: number; readonly chars?: RegExp }
  | { readonly width: null; readonly chars: RegExp; readonly prints: string };

/** A part's text being read back: the whole value, where the part's text starts, what is read so far. */
interface ReadState {
  readonly value: string;
  readonly at: number;
  readonly out: FormatReading;
}

interface PartKind<P extends FormatPart> {
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
const show = (s: string) => (s.length > 40 ? `${s.slice(0, 40)}…` : s);
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

const KINDS: { readonly [K in FormatPart["kind"]]: PartKind<PartOf<K>> } = {
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
const digitsOf = (text: string) => (ONLY_DIGITS.test(text) ? text : text.replace(NON_DIGITS, ""));

/** The table entry of a part, typed for any part. */
const kindOf = (p: FormatPart) => KINDS[p.kind] as unknown as PartKind<FormatPart>;
const BY_KEYWORD = new Map<string, PartKind<FormatPart>>(
  Object.values(KINDS).flatMap((k) => k.keywords.map((w) => [w, k as unknown as PartKind<FormatPart>] as const)),
);
const PLACEHOLDER_USAGE = Object.values(KINDS)
  .flatMap((k) => k.usage)
  .join(", ");
const CONTROL = /\p{Cc}/u;

/**
 * Where readValue finds a part's text: a fixed width; or, for a variable-width part, everything up to
 * a fixed suffix of `suffix` characters, or up to the first character that `chars` does not match, less
 * `offset` (the width of the fixed-width parts between the part and that character).
 */
type Extent = { readonly width: number } | { readonly suffix: number } | { readonly chars: RegExp; readonly offset: number };
interface Step {
  readonly part: FormatPart;
  readonly extent: Extent;
  /** The most characters it prints. */
  readonly max: number;
}
/** How to read a template's values under one policy, or why they cannot be read ([position, problem]). */
interface Layout {
  readonly steps: readonly Step[];
  readonly problems: readonly (readonly [number, string])[];
}

function ambiguity(p: FormatPart, prints: string, next: FormatPart, overflow: OverflowPolicy): string {
  const fixed = overflow === "refuse" ? "literals, date parts, {seq:N}, {check:…}" : "literals, date parts, {check:…}; {seq:N} widens";
  return (
    `${show(p.source)} at position ${p.at}: ambiguous: it prints ${prints}, and nothing between it and ` +
    `${show(next.source)} at position ${next.at} shows where it ends; put a character it never prints between them ` +
    `(such as "-"), or only fixed-width parts after it (${fixed})`
  );
}

/** The rule of the header, applied: one step per part, one problem per variable-width part that breaks it. */
function layout(parts: readonly FormatPart[], overflow: OverflowPolicy): Layout {
  const shapes = parts.map((p) => kindOf(p).shape(p, overflow));
  const steps: Step[] = [];
  const problems: [number, string][] = [];
  parts.forEach((part, i) => {
    const shape = shapes[i] as Shape;
    const max = kindOf(part).maxLength(part, overflow);
    if (shape.width !== null) {
      steps.push({ part, extent: { width: shape.width }, max });
      return;
    }
    // What the part and the fixed-width placeholders after it may print: the first other character ends the scan.
    const classes = [shape.chars];
    const printable = (ch: string) => classes.some((c) => c.test(ch));
    let offset = 0;
    for (let j = i + 1; j < parts.length; j++) {
      const next = parts[j] as FormatPart;
      const after = shapes[j] as Shape;
      if (after.width === null) {
        problems.push([part.at, ambiguity(part, shape.prints, next, overflow)]);
        return;
      }
      if (next.kind === "literal") {
        for (let k = 0; k < next.text.length; k++)
          if (!printable(next.text.charAt(k))) {
            const chars = new RegExp([...new Set(classes.map((c) => c.source))].join("|"));
            steps.push({ part, extent: { chars, offset: offset + k }, max });
            return;
          }
      } else if (after.chars) classes.push(after.chars);
      offset += after.width;
    }
    steps.push({ part, extent: { suffix: offset }, max });
  });
  return { steps, problems };
}

const LAYOUTS = new WeakMap<ParsedFormat, Map<OverflowPolicy, Layout>>();

/** The steps that read a format's values under a policy; FORMAT_INVALID if it is ambiguous under it. */
function stepsOf(format: ParsedFormat, overflow: OverflowPolicy): readonly Step[] {
  const layouts = LAYOUTS.get(format) ?? new Map<OverflowPolicy, Layout>();
  const l = layouts.get(overflow) ?? layout(format.parts, overflow);
  LAYOUTS.set(format, layouts.set(overflow, l));
  if (l.problems.length > 0)
    throw new IddError(
      "FORMAT_INVALID",
      `format "${show(format.template)}" under overflow ${overflow}:\n${l.problems.map(([, text]) => text).join("\n")}`,
    );
  return l.steps;
}

/**
 * Parses a template and reports every problem at once, each with its position; never throws. Ambiguous
 * templates (see the header) are refused for the overflow policy given (default refuse).
 */
export function parseFormat(template: string, options?: { overflow?: OverflowPolicy }): { format?: ParsedFormat; problems: string[] } {
  if (typeof template !== "string") return { problems: ["the format must be a string"] };
  const overflow = options?.overflow ?? "refuse";
  if (!OVERFLOW_POLICIES.includes(overflow))
    return { problems: [`the overflow policy must be one of ${OVERFLOW_POLICIES.join(", ")} (got "${show(String(overflow))}")`] };
  if (template.length === 0) return { problems: ["the format is empty: it needs at least {seq}"] };
  /** [position, text]: listed in template order, problems of the whole template first and last. */
  const found: [number, string][] = [];
  const problem = (at: number, text: string) => found.push([at, text]);
  if (template.length > MAX_TEMPLATE_LENGTH)
    problem(0, `the format is ${template.length} characters long; at most ${MAX_TEMPLATE_LENGTH} are allowed`);
  const parts: FormatPart[] = [];
  let text = "";
  let textAt = 0;
  const flush = () => {
    if (text) parts.push({ kind: "literal", text, at: textAt, source: text });
    text = "";
  };
  const literal = (s: string, i: number) => {
    if (!text) textAt = i + 1;
    text += s;
  };
  /** Kinds written at least once, even wrongly: a bad {seq:0} is reported once, not also as a missing {seq}. */
  const written = new Set<PartKind<FormatPart>>();
  const placeholder = (body: string, at: number, closed: boolean) => {
    const [keyword = "", ...args] = body.split(":");
    const kind = BY_KEYWORD.get(keyword);
    if (kind) written.add(kind);
    if (!closed) {
      problem(at, `position ${at}: "{" opens a placeholder that is never closed (write {{ for a literal brace)`);
      return;
    }
    const source = `{${body}}`;
    if (!kind) {
      const near = [...BY_KEYWORD.keys()].filter((w) => w.toLowerCase() === keyword.trim().toLowerCase());
      for (const w of near) written.add(BY_KEYWORD.get(w) as PartKind<FormatPart>);
      const hint = near.length > 0 ? ` (did you mean ${near.map((w) => `{${w}}`).join(" or ")}?)` : "";
      problem(
        at,
        `${show(source)} at position ${at}: unknown placeholder${hint}; expected one of ${PLACEHOLDER_USAGE} (write {{ and }} for literal braces)`,
      );
      return;
    }
    const parsed = kind.parse(keyword, args);
    if (typeof parsed === "string") problem(at, `${show(source)} at position ${at}: ${parsed}`);
    else parts.push({ ...parsed, at, source } as FormatPart);
  };

  for (let i = 0; i < template.length; ) {
    const ch = template.charAt(i);
    const pair = template.slice(i, i + 2);
    if (pair === "{{" || pair === "}}") {
      literal(ch, i);
      i += 2;
    } else if (ch === "}") {
      problem(i + 1, `position ${i + 1}: a lone "}" (write }} for a literal brace)`);
      i++;
    } else if (ch === "{") {
      flush();
      const close = template.indexOf("}", i + 1);
      const reopen = template.indexOf("{", i + 1);
      const closed = close >= 0 && (reopen < 0 || close < reopen);
      const end = closed ? close : reopen >= 0 ? reopen : template.length;
      placeholder(template.slice(i + 1, end), i + 1, closed);
      i = closed ? end + 1 : end;
    } else {
      if (CONTROL.test(ch)) problem(i + 1, `position ${i + 1}: a control character (U+${ch.charCodeAt(0).toString(16).padStart(4, "0")})`);
      literal(ch, i);
      i++;
    }
  }
  flush();

  const seen = new Map<string, FormatPart>();
  parts.forEach((p, index) => {
    const kind = kindOf(p);
    const label = kind.once?.(p);
    const first = label === undefined ? undefined : seen.get(label);
    if (label !== undefined && first)
      problem(p.at, `${show(p.source)} at position ${p.at}: ${label} may appear only once (first at position ${first.at})`);
    else if (label !== undefined) seen.set(label, p);
    const next = parts[index + 1];
    if (kind.last && next)
      problem(p.at, `${show(p.source)} at position ${p.at}: must be the last part (found "${show(next.source)}" after it)`);
  });
  for (const kind of Object.values(KINDS) as PartKind<FormatPart>[]) {
    if (kind.required && !written.has(kind))
      problem(Number.POSITIVE_INFINITY, `the format has no ${kind.usage.join(", ").replace(/, ([^,]*)$/, " or $1")}: it needs exactly one`);
  }
  // Parts written wrongly are missing here; that can hide an ambiguity, never invent one.
  const readable = layout(parts, overflow);
  for (const [at, text] of readable.problems) problem(at, text);
  if (found.length > 0) return { problems: found.sort(([a], [b]) => a - b).map(([, text]) => text) };

  const seq = parts.find((p): p is PartOf<"seq"> => p.kind === "seq");
  const check = parts.find((p): p is PartOf<"check"> => p.kind === "check");
  const format: ParsedFormat = {
    template,
    parts,
    seqWidth: seq?.width ?? null,
    obfuscated: seq?.obfuscated ?? false,
    fields: new Map(parts.filter((p): p is PartOf<"field"> => p.kind === "field").map((p) => [p.name, p.maxLength])),
    dateUnits: new Set(parts.filter((p): p is PartOf<"date"> => p.kind === "date").map((p) => p.unit)),
    check: check?.algorithm ?? null,
    overflow,
  };
  LAYOUTS.set(format, new Map([[overflow, readable]]));
  return { format, problems: [] };
}

/** parseFormat, or FORMAT_INVALID listing every problem. */
export function compileFormat(template: string, options?: { overflow?: OverflowPolicy }): ParsedFormat {
  const { format, problems } = parseFormat(template, options);
  if (!format) throw new IddError("FORMAT_INVALID", `format "${show(String(template))}":\n${problems.join("\n")}`);
  return format;
}

export type FormatPeriod = "daily" | "monthly" | "yearly" | "never";

/**
 * The finest reset period the template tells apart: daily if it prints year, month and day; monthly if
 * year and month; yearly if year; never otherwise. A sequence resetting more often would repeat values.
 */
export function finestPeriod(format: ParsedFormat): FormatPeriod {
  const u = format.dateUnits;
  if (!u.has("yyyy") && !u.has("yy")) return "never";
  if (!u.has("MM")) return "yearly";
  return u.has("dd") ? "daily" : "monthly";
}

/**
 * The largest serial the template prints without overflowing: 10^N - 1 for `{seq:N}`, 10^(N-1) - 1 for
 * `{obf:N}` (whatever the policy: a value never widens); null for `{seq}`.
 */
export function maxSerial(format: ParsedFormat): bigint | null {
  if (format.seqWidth === null) return null;
  return 10n ** BigInt(format.obfuscated ? format.seqWidth - 1 : format.seqWidth) - 1n;
}

/** The longest value the format renders (serials up to 2^53 - 1, fields at their maximum length). */
export function maxLength(format: ParsedFormat, overflow: OverflowPolicy = format.overflow): number {
  return format.parts.reduce((sum, p) => sum + kindOf(p).maxLength(p, overflow), 0);
}

const MAX_FIELD_PROBLEMS = 10;

/** What is wrong with a request's fields for this format: missing, unknown, empty, too long, bad characters. */
export function validateFields(format: ParsedFormat, fields: Readonly<Record<string, unknown>> | undefined): string[] {
  const problems: string[] = [];
  const given = fields ?? {};
  for (const [name, max] of format.fields) {
    if (!Object.hasOwn(given, name)) {
      problems.push(`field "${name}" is missing`);
      continue;
    }
    const v = given[name];
    if (typeof v !== "string") problems.push(`field "${name}" must be a string`);
    else if (v.length === 0) problems.push(`field "${name}" is empty`);
    else if (v.length > max) problems.push(`field "${name}" is ${v.length} characters long; at most ${max}`);
    else if (!FIELD_VALUE.test(v)) problems.push(`field "${name}" has characters outside A-Z a-z 0-9`);
  }
  const unknown = Object.keys(given).filter((name) => !format.fields.has(name));
  const known = format.fields.size > 0 ? `the format's fields are ${[...format.fields.keys()].join(", ")}` : "the format has no fields";
  for (const name of unknown.slice(0, MAX_FIELD_PROBLEMS)) problems.push(`unknown field "${show(name)}": ${known}`);
  if (unknown.length > MAX_FIELD_PROBLEMS) problems.push(`and ${unknown.length - MAX_FIELD_PROBLEMS} more unknown fields`);
  return problems;
}

export interface RenderOptions {
  /** The request's instant: every date part prints it. */
  epochMs: number;
  /** The sequence's IANA time zone. */
  timeZone: string;
  fields?: Readonly<Record<string, unknown>>;
  /** Default: the policy the format was checked for (parseFormat's, itself default refuse). */
  overflow?: OverflowPolicy;
}

/**
 * Binds a format to one request (instant, zone, fields) and returns the renderer of its serials. Dates
 * and fields are computed here once; each serial then costs its own digits and the check. Throws
 * BAD_FIELDS (every problem) for bad fields, FORMAT_INVALID for a policy under which the format is
 * ambiguous (widen, for a format checked for refuse only); the renderer throws SERIAL_OVERFLOW when policy refuse.
 */
export function formatterFor(format: ParsedFormat, options: RenderOptions): (serial: bigint) => string {
  const overflow = options.overflow ?? format.overflow;
  if (overflow !== format.overflow) stepsOf(format, overflow);
  const problems = validateFields(format, options.fields);
  if (problems.length > 0) throw new IddError("BAD_FIELDS", problems.join("\n"));
  const request: Request = {
    date: format.dateUnits.size > 0 ? dateStrings(options.timeZone, options.epochMs) : null,
    fields: (options.fields ?? {}) as Readonly<Record<string, string>>,
    overflow,
  };
  const segments: Segment[] = [];
  for (const p of format.parts) {
    const s = kindOf(p).bind(p, request);
    const prev = segments.at(-1);
    if (typeof s === "string" && typeof prev === "string") segments[segments.length - 1] = prev + s;
    else segments.push(s);
  }
  if (!format.parts.some((p) => kindOf(p).readsDigits))
    return (serial) => {
      if (serial < 0n) throw new RangeError(`serials are never negative (got ${serial})`);
      let out = "";
      for (const s of segments) out += typeof s === "string" ? s : s(serial, out, "");
      return out;
    };
  // Fixed text's digits are extracted once here; computed text (the serial) is nearly always all digits.
  const withDigits = segments.map((segment) => ({ segment, digits: typeof segment === "string" ? digitsOf(segment) : "" }));
  return (serial) => {
    if (serial < 0n) throw new RangeError(`serials are never negative (got ${serial})`);
    let out = "";
    let digits = "";
    for (const { segment, digits: fixed } of withDigits) {
      if (typeof segment === "string") {
        out += segment;
        digits += fixed;
      } else {
        const text = segment(serial, out, digits);
        out += text;
        digits += digitsOf(text);
      }
    }
    return out;
  };
}

/**
 * The inverse of rendering: the serial, fields and date parts a value was printed from, read left to
 * right as the header's rule says (no backtracking); undefined if the format never prints the value
 * (a wrong literal or length, characters a part never prints, a serial with leading zeros it would not
 * print, a date part out of its range or disagreeing with another, a check its algorithm rejects).
 * Policy: default the format's; FORMAT_INVALID for a policy under which the format is ambiguous.
 */
export function readValue(format: ParsedFormat, value: string, options?: { overflow?: OverflowPolicy }): FormatReading | undefined {
  const steps = stepsOf(format, options?.overflow ?? format.overflow);
  if (typeof value !== "string") return undefined;
  const out: FormatReading = { serial: -1n, fields: {}, date: {} };
  let at = 0;
  for (const { part, extent, max } of steps) {
    let end: number;
    if ("width" in extent) end = at + extent.width;
    else {
      if ("suffix" in extent) end = value.length - extent.suffix;
      else {
        let k = at;
        while (k < value.length && extent.chars.test(value.charAt(k))) k++;
        end = k - extent.offset;
      }
      if (end <= at || end - at > max) return undefined;
    }
    if (end > value.length || !kindOf(part).read(part, value.slice(at, end), { value, at, out })) return undefined;
    at = end;
  }
  return at === value.length ? out : undefined;
}
