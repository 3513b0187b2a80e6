/** The README's settings tables are what the rows of settings.ts generate (`npm run docs:settings`). */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { PACKAGE_ROOT } from "../core/package-root.js";
import { SETTINGS } from "./settings.js";
import { settingsTables, withSettingsTables } from "./settings-doc.js";

const readme = readFileSync(join(PACKAGE_ROOT, "README.md"), "utf8");

test("the README's settings tables match the rows (run `npm run docs:settings` after changing them)", () => {
  expect(readme).toBe(withSettingsTables(readme));
});

test("every row is in a table, once", () => {
  const lines = settingsTables().split("\n");
  for (const row of SETTINGS)
    expect(
      lines.filter((l) => l.startsWith(`| \`${row.env}\``)),
      row.env,
    ).toHaveLength(1);
});
