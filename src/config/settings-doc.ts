/**
 * The settings tables of docs/settings.md, generated from the rows of settings.ts: one table per
 * group (variable, default, range, meaning) between the markers below. `npm run docs:settings`
 * rewrites them; settings-doc.test.ts fails when the page differs from what the rows generate.
 */
import { SETTING_GROUPS, SETTINGS, type SettingRow } from "./settings.js";

/** The page that holds the tables, relative to the package root. */
export const SETTINGS_PAGE = "docs/settings.md";
export const SETTINGS_START = "<!-- settings:start -->";
export const SETTINGS_END = "<!-- settings:end -->";

const UNITS: [ms: number, unit: string][] = [
  [86_400_000, "d"],
  [3_600_000, "h"],
  [60_000, "min"],
  [1000, "s"],
];

const thousands = (n: number): string => n.toLocaleString("en-US");

/** 300000 → "5 min", 1500 → "1,500 ms" (ms settings); 65536 → "64 KiB" (byte settings); else 10,000. */
function amount(row: SettingRow, n: number): string {
  if (n === 0) return "0";
  if (row.env.endsWith("_MS")) {
    const unit = UNITS.find(([ms]) => n % ms === 0);
    return unit ? `${thousands(n / unit[0])} ${unit[1]}` : `${thousands(n)} ms`;
  }
  if (row.env.includes("_BYTES")) {
    if (n % (1024 * 1024) === 0) return `${thousands(n / (1024 * 1024))} MiB`;
    if (n % 1024 === 0) return `${thousands(n / 1024)} KiB`;
  }
  return thousands(n);
}

function defaultCell(row: SettingRow): string {
  if (row.defaultText !== undefined) return row.defaultText;
  if (typeof row.default === "number") return amount(row, row.default);
  if (typeof row.default === "boolean") return String(row.default);
  return `\`${row.default}\``;
}

function rangeCell(row: SettingRow): string {
  if (row.range) return `${amount(row, row.range[0])} … ${amount(row, row.range[1])}${row.fraction ? "" : ", whole"}`;
  if (row.values) return row.values.map((v) => `\`${v}\``).join(", ");
  if (row.pattern) return row.pattern[1];
  if (typeof row.default === "boolean") return "`true` or `false` (`1`, `0`)";
  return "";
}

function line(row: SettingRow): string {
  const name = row.file ? `\`${row.env}\` (or \`_FILE\`)` : `\`${row.env}\``;
  const meaning = row.readBy
    ? `${row.doc} Read by ${row.readBy
        .split(", ")
        .map((w) => `\`${w}\``)
        .join(", ")}.`
    : row.doc;
  return `| ${name} | ${defaultCell(row)} | ${rangeCell(row)} | ${meaning} |`;
}

/** The tables, one per group in the rows' order, without the markers. */
export function settingsTables(rows: readonly SettingRow[] = SETTINGS): string {
  const parts: string[] = [];
  for (const [group, title] of Object.entries(SETTING_GROUPS)) {
    const mine = rows.filter((r) => r.group === group);
    if (mine.length === 0) continue;
    parts.push(`**${title}**`, "", "| variable | default | range | meaning |", "|---|---|---|---|", ...mine.map(line), "");
  }
  return parts.join("\n");
}

/** `page` with the text between the markers replaced by the generated tables. */
export function withSettingsTables(page: string): string {
  const start = page.indexOf(SETTINGS_START);
  const end = page.indexOf(SETTINGS_END);
  if (start < 0 || end < start) throw new Error(`${SETTINGS_PAGE} has no ${SETTINGS_START} … ${SETTINGS_END} markers`);
  const note = "<!-- generated from the rows of src/config/settings*.ts by `npm run docs:settings`: edit the rows there -->";
  return `${page.slice(0, start)}${SETTINGS_START}\n${note}\n\n${settingsTables()}\n${page.slice(end)}`;
}
