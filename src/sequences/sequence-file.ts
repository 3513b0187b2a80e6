/**
 * A file of sequence definitions for `idd seq create --from`: JSON lines (one object per line) or
 * CSV (a header row naming the fields). Fields are those of `idd seq create`, in camelCase or as the
 * option is spelled (`maxValue` or `max-value`); what a line leaves out comes from `defaults` (the
 * command's options), then from the kind's defaults. Every line is checked before anything is
 * written, and every problem is reported with its line number.
 */
import { IddError } from "../core/errors.js";
import { defineSequence, type SequenceDef, type SequenceInput } from "./definition.js";

/** The fields a line may set, as SequenceInput names them. */
const FIELDS = [
  "name",
  "kind",
  "start",
  "maxValue",
  "timeZone",
  "period",
  "format",
  "overflow",
  "digits",
  "keyVersion",
  "layout",
  "grantLog",
  "audit",
  "gapless",
  "confirmTimeout",
] as const;
type Field = (typeof FIELDS)[number];
const BOOLEAN_FIELDS = new Set<Field>(["audit", "gapless"]);
/** `max-value`, `maxValue` and `max_value` name one field. */
const FIELD_BY_SPELLING = new Map<string, Field>(FIELDS.map((f) => [spelling(f), f]));
function spelling(name: string): string {
  return name.replace(/[-_]/g, "").toLowerCase();
}

/** The most problems a refused file lists. */
const MAX_LISTED = 20;

/** Definitions from `text` (JSON lines or CSV); throws SEQUENCE_INVALID listing the lines that are not definitions. */
export function readSequenceFile(text: string, defaults: Partial<SequenceInput>, now: Date, source = "the file"): SequenceDef[] {
  return defineSequences(text.trimStart().startsWith("{") ? jsonLines(text) : csvRows(text), defaults, now, source, "lines");
}

/**
 * Definitions from many inputs (`defaults` under each), all checked before any is returned: throws
 * SEQUENCE_INVALID listing every input that is not a definition (a name given twice included).
 */
export function defineSequences(
  rows: readonly Row[],
  defaults: Partial<SequenceInput>,
  now: Date,
  source: string,
  unit: "lines" | "inputs",
): SequenceDef[] {
  const problems: string[] = [];
  const defs: SequenceDef[] = [];
  const seen = new Map<string, number>();
  const at = unit === "lines" ? "line" : "input";
  for (const row of rows) {
    if ("problem" in row) {
      problems.push(`${at} ${row.line}: ${row.problem}`);
      continue;
    }
    try {
      const def = defineSequence({ ...defaults, ...row.input } as SequenceInput, now);
      const first = seen.get(def.name);
      if (first !== undefined) problems.push(`${at} ${row.line}: "${def.name}" is defined on ${at} ${first} already`);
      else seen.set(def.name, row.line);
      defs.push(def);
    } catch (e) {
      // defineSequence says `sequence "name":` then one problem per line.
      const said = e instanceof Error ? e.message.split("\n") : [String(e)];
      const what = said.length > 1 ? said.slice(1) : said;
      problems.push(`${at} ${row.line} ("${String(row.input.name).slice(0, 64)}"): ${what.join("; ")}`);
    }
  }
  if (problems.length > 0) {
    const more = problems.length > MAX_LISTED ? [`… and ${problems.length - MAX_LISTED} more`] : [];
    throw new IddError(
      "SEQUENCE_INVALID",
      `${source}: ${problems.length} of ${rows.length} ${unit} are not sequence definitions; nothing was created:\n${[...problems.slice(0, MAX_LISTED), ...more].join("\n")}`,
    );
  }
  if (defs.length === 0) throw new IddError("SEQUENCE_INVALID", `${source} defines no sequence`);
  return defs;
}

/** Inputs as `defineSequences` takes them, numbered from 1. */
export const numbered = (inputs: readonly SequenceInput[]): Row[] => inputs.map((input, i) => ({ line: i + 1, input }));

export type Row = { line: number; input: Partial<SequenceInput> } | { line: number; problem: string };

function jsonLines(text: string): Row[] {
  const rows: Row[] = [];
  text.split("\n").forEach((raw, i) => {
    if (raw.trim() === "") return;
    const line = i + 1;
    let o: unknown;
    try {
      o = JSON.parse(raw);
    } catch {
      rows.push({ line, problem: "not a JSON object" });
      return;
    }
    if (typeof o !== "object" || o === null || Array.isArray(o)) {
      rows.push({ line, problem: "not a JSON object" });
      return;
    }
    rows.push(toInput(line, Object.entries(o)));
  });
  return rows;
}

function csvRows(text: string): Row[] {
  const records = parseCsv(text);
  const header = records.shift();
  if (!header) return [];
  const rows: Row[] = [];
  for (const r of records) {
    if (r.cells.length === 1 && r.cells[0] === "") continue; // a blank line
    if (r.cells.length !== header.cells.length) {
      rows.push({ line: r.line, problem: `${r.cells.length} cells where the header names ${header.cells.length}` });
      continue;
    }
    // An empty cell leaves the field to the defaults.
    rows.push(
      toInput(
        r.line,
        header.cells.map((h, i) => [h, r.cells[i] === "" ? undefined : r.cells[i]] as const),
      ),
    );
  }
  return rows;
}

function toInput(line: number, entries: readonly (readonly [string, unknown])[]): Row {
  const input: Record<string, unknown> = {};
  for (const [name, value] of entries) {
    const field = FIELD_BY_SPELLING.get(spelling(name));
    if (!field) return { line, problem: `unknown field "${name.slice(0, 40)}" (fields: ${FIELDS.join(", ")})` };
    if (value === undefined || value === null) continue;
    if (BOOLEAN_FIELDS.has(field)) {
      const b = value === true || value === "true" ? true : value === false || value === "false" ? false : undefined;
      if (b === undefined) return { line, problem: `${field} must be true or false` };
      input[field] = b;
    } else if (typeof value === "string" || typeof value === "number") input[field] = value;
    else return { line, problem: `${field} must be a string or a number` };
  }
  if (typeof input.name !== "string") return { line, problem: "no name" };
  return { line, input: input as Partial<SequenceInput> };
}

/** RFC 4180 CSV: cells quoted with `"` may hold commas, quotes (doubled) and line breaks. */
function parseCsv(text: string): { line: number; cells: string[] }[] {
  const out: { line: number; cells: string[] }[] = [];
  let cells: string[] = [];
  let cell = "";
  let quoted = false;
  let line = 1;
  let startLine = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else {
        if (c === "\n") line++;
        cell += c;
      }
    } else if (c === '"' && cell === "") quoted = true;
    else if (c === ",") {
      cells.push(cell);
      cell = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      cells.push(cell);
      out.push({ line: startLine, cells });
      cells = [];
      cell = "";
      line++;
      startLine = line;
    } else cell += c;
  }
  if (cell !== "" || cells.length > 0) {
    cells.push(cell);
    out.push({ line: startLine, cells });
  }
  return out;
}
