/** The checks of a request's fields against a format's `{field:name:N}` parts (format.ts). */

import { FIELD_VALUE, show } from "./format-parts.js";

const MAX_FIELD_PROBLEMS = 10;

/** What is wrong with a request's fields for this format: missing, unknown, empty, too long, bad characters. */
export function validateFields(
  format: { readonly fields: ReadonlyMap<string, number> },
  fields: Readonly<Record<string, unknown>> | undefined,
): string[] {
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
