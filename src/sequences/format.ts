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
 * The part kinds are one table (KINDS, format-parts.ts): a new kind is one entry there, one member of
 * FormatPart, and nothing else. format-layout.ts applies the rule above; format-fields.ts checks a
 * request's fields. This module is the public surface and re-exports what callers use of them.
 */

import { DATE_UNITS, type DateStrings, type DateUnit, dateStrings } from "../core/date-parts.js";
import { IddError } from "../core/errors.js";
import type { Period } from "../core/period.js";
import type { CheckAlgorithm } from "./check-digits.js";
import { validateFields } from "./format-fields.js";
import { type Layout, layout, type Step } from "./format-layout.js";
import {
  BY_KEYWORD,
  digitsOf,
  type FormatPart,
  type FormatReading,
  KINDS,
  kindOf,
  OVERFLOW_POLICIES,
  type OverflowPolicy,
  type PartKind,
  type PartOf,
  PLACEHOLDER_USAGE,
  type Request,
  type Segment,
  show,
} from "./format-parts.js";

export {
  DEFAULT_FIELD_LENGTH,
  FIELD_NAME,
  FIELD_VALUE,
  type FormatPart,
  type FormatReading,
  MAX_FIELD_LENGTH,
  MAX_SEQ_WIDTH,
  MAX_SERIAL_DIGITS,
  OVERFLOW_POLICIES,
  type OverflowPolicy,
} from "./format-parts.js";
export { DATE_UNITS, type DateStrings, type DateUnit, dateStrings, validateFields };

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

export const MAX_TEMPLATE_LENGTH = 256;
const CONTROL = /\p{Cc}/u;

/**
 * The one cache of parsed formats, by policy and template: each valid format parseFormat returned,
 * with its layouts under the policies it was read with (its own first). Cleared when full.
 */
const PARSED = new Map<string, { readonly format: ParsedFormat; readonly layouts: Map<OverflowPolicy, Layout> }>();
const MAX_PARSED = 10_000;
const keyOf = (template: string, overflow: OverflowPolicy) => `${overflow}\u0000${template}`;

function remember(format: ParsedFormat, layouts: Map<OverflowPolicy, Layout>) {
  if (PARSED.size >= MAX_PARSED) PARSED.clear();
  const entry = { format, layouts };
  PARSED.set(keyOf(format.template, format.overflow), entry);
  return entry;
}

/** The steps that read a format's values under a policy; FORMAT_INVALID if it is ambiguous under it. */
function stepsOf(format: ParsedFormat, overflow: OverflowPolicy): readonly Step[] {
  const { layouts } = PARSED.get(keyOf(format.template, format.overflow)) ?? remember(format, new Map());
  const l = layouts.get(overflow) ?? layout(format.parts, overflow);
  layouts.set(overflow, l);
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
  remember(format, new Map([[overflow, readable]]));
  return { format, problems: [] };
}

/** parseFormat, answered from the cache for a template it already accepted under the policy. */
export function parseFormatCached(template: string, overflow: OverflowPolicy): { format?: ParsedFormat; problems: string[] } {
  const hit = PARSED.get(keyOf(template, overflow));
  return hit ? { format: hit.format, problems: [] } : parseFormat(template, { overflow });
}

/** parseFormat, or FORMAT_INVALID listing every problem. */
export function compileFormat(template: string, options?: { overflow?: OverflowPolicy }): ParsedFormat {
  const { format, problems } = parseFormat(template, options);
  if (!format) throw new IddError("FORMAT_INVALID", `format "${show(String(template))}":\n${problems.join("\n")}`);
  return format;
}

/**
 * The finest reset period the template tells apart: daily if it prints year, month and day; monthly if
 * year and month; yearly if year; never otherwise. A sequence resetting more often would repeat values.
 */
export function finestPeriod(format: ParsedFormat): Period {
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
