/**
 * `formatted`: business numbers printed by a template (src/sequences/format.ts), e.g.
 * `{yyyy}{MM}{dd}{seq:5}` → 2026112300001. The serial comes from the sequence's counter; the
 * template prints it with the request's instant in the sequence's time zone, the request's fields
 * and a check digit. The counter restarts with the finest date the template prints (daily for a
 * day, monthly for a month, yearly for a year, never without one) unless a coarser period is set:
 * a finer one would print the same value twice. Under `overflow: refuse` (the default) `maxValue`
 * is at most the largest serial `{seq:N}` prints, so the counter stops there (SEQUENCE_EXHAUSTED).
 *
 * With `{obf:N}` instead of `{seq}` the serial is printed obfuscated, as the obfuscated kind prints it
 * (key version digit, then FF1), e.g. `{obf:10}{check:damm}` → 48172639503. The reply's numbers are then
 * the values (one single-number range each, as the obfuscated kind's), and `maxValue` stops at the
 * domain's last serial under either overflow policy. The FF1 tweak is the sequence name and the dates the
 * template prints (tweakContext): a serial that restarts each period gets a different value each period
 * (no value recurs as "the first of the day"), and `idd decode` finds the tweak in the value itself. A
 * template printing no date has the sequence name alone as its tweak, as an obfuscated sequence does.
 */

import { type DateUnit, dateStrings } from "../../core/date-parts.js";
import { IddError } from "../../core/errors.js";
import { PERIODS, type Period } from "../../core/period.js";
import {
  finestPeriod,
  formatterFor,
  maxSerial,
  OVERFLOW_POLICIES,
  type OverflowPolicy,
  type ParsedFormat,
  parseFormat,
  parseFormatCached,
  validateFields,
} from "../format.js";
import type { FormattedDef } from "../sequence-def.js";
import { refuseSettings, type SequenceKind, zoneSetting } from "./kind.js";
import { encodedRanges, keyProblem, keyVersionSetting } from "./obfuscated.js";

/** Coarse to fine: a period may be set to the template's finest one or anything before it. */
const FINENESS: Record<Period, number> = { never: 0, yearly: 1, monthly: 2, daily: 3 };

/** The parsed template of a stored definition (valid: it was checked when defined), from format.ts's cache. */
export function formatOf(s: Pick<FormattedDef, "format" | "overflow">): ParsedFormat {
  const { format, problems } = parseFormatCached(s.format, s.overflow);
  if (!format) throw new IddError("FORMAT_INVALID", `stored format "${s.format}": ${problems.join("; ")}`);
  return format;
}

export const formatted: SequenceKind<FormattedDef> = {
  name: "formatted",
  summary: "numbers printed by --format, e.g. '{yyyy}{MM}{dd}{seq:5}'; restarts with the finest date it prints unless --period is coarser",
  source: "counter",
  prints: true,
  settings(input, existing, problems) {
    refuseSettings("formatted", input, ["timeZone", "period", "format", "overflow", "keyVersion"], problems);
    const timeZone = zoneSetting(input, existing, problems);
    const template = input.format ?? existing?.format ?? "";
    if (existing && input.format !== undefined && input.format !== existing.format)
      problems.push("format cannot change once numbers may have been issued (values could repeat)");
    const overflow = (input.overflow ?? existing?.overflow ?? "refuse") as OverflowPolicy;
    if (!OVERFLOW_POLICIES.includes(overflow))
      problems.push(`overflow must be one of ${OVERFLOW_POLICIES.join(", ")} (got "${input.overflow}")`);
    if (template === "") {
      problems.push("format is required for formatted sequences, e.g. --format '{yyyy}{MM}{dd}{seq:5}'");
      return { timeZone, period: "never", format: template, overflow, obfuscation: null, snowflake: null };
    }
    const { format, problems: formatProblems } = parseFormat(template, { overflow });
    problems.push(...formatProblems.map((p) => `format: ${p}`));
    const finest = format ? finestPeriod(format) : "never";
    const period = (input.period ?? existing?.period ?? finest) as Period;
    if (!PERIODS.includes(period)) problems.push(`period must be one of ${PERIODS.join(", ")} (got "${input.period}")`);
    else if (existing && period !== existing.period) problems.push("period cannot change once numbers may have been issued");
    else if (format && FINENESS[period] > FINENESS[finest])
      problems.push(
        `period ${period} restarts the serial more often than the format prints the date (${finest}): values would repeat; use ${PERIODS.filter((p) => FINENESS[p] <= FINENESS[finest]).join(", ")}, or print a finer date`,
      );
    let obfuscation: FormattedDef["obfuscation"] = null;
    if (format?.obfuscated && format.seqWidth !== null)
      obfuscation = { digits: format.seqWidth, keyVersion: keyVersionSetting(input, existing?.obfuscation ?? undefined, problems) };
    else if (input.keyVersion !== undefined) problems.push("keyVersion applies only to a format that prints {obf:N}");
    return { timeZone, period, format: template, overflow, obfuscation, snowflake: null };
  },
  limit(settings) {
    if (settings.format === "") return null;
    const { format } = parseFormat(settings.format, { overflow: settings.overflow });
    return format && (settings.overflow === "refuse" || format.obfuscated) ? maxSerial(format) : null;
  },
  refuse(def, request, ctx) {
    const problems = validateFields(formatOf(def), request.fields);
    if (problems.length > 0) return new IddError("BAD_FIELDS", `sequence "${def.name}": ${problems.join("; ")}`);
    return def.obfuscation ? keyProblem({ name: def.name, obfuscation: def.obfuscation }, ctx) : undefined;
  },
  // Printing {obf:N}, a value per number (as the obfuscated kind's): bounded like formatted values.
  maxCount: (def, limits) => (def.obfuscation ? limits.maxFormatted : undefined),
  numbers: (def, issued, ctx) =>
    def.obfuscation
      ? encodedRanges({ name: def.name, obfuscation: def.obfuscation }, issued.ranges, ctx, printedDates(def, issued.at))
      : issued.ranges,
  present(def, issued, request) {
    const render = formatterFor(formatOf(def), {
      epochMs: issued.at,
      timeZone: def.timeZone,
      fields: request.fields,
      overflow: def.overflow,
    });
    const out: string[] = [];
    for (const r of issued.ranges) for (let n = r.first; n <= r.last; n++) out.push(render(n));
    return out;
  },
};

/** The FF1 tweak's context of a formatted sequence's values issued at `epochMs` (see tweakContext). */
export function printedDates(def: FormattedDef, epochMs: number): string | undefined {
  const format = formatOf(def);
  return format.dateUnits.size === 0 ? undefined : tweakContext(format, dateStrings(def.timeZone, epochMs));
}

/**
 * The context of the FF1 tweak (keys.ts) of a value printing `{obf:N}`: the dates its template prints,
 * in template order; undefined for a template printing no date, whose tweak is the sequence name alone.
 * Encoding (printedDates) and decoding (decode.ts, from the dates read back) both go through here. The
 * undefined is what workers have always encoded such values with (an empty context is another tweak, and
 * other values), so values issued before keep decoding and no value can repeat an earlier one.
 */
export function tweakContext(format: ParsedFormat, dates: Partial<Record<DateUnit, string>>): string | undefined {
  if (format.dateUnits.size === 0) return undefined;
  let out = "";
  for (const u of format.dateUnits) out += dates[u] ?? "";
  return out;
}
