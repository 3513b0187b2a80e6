/** The settings tables of docs/settings.md are what the rows of settings.ts generate (`npm run docs:settings`). */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { PACKAGE_ROOT } from "../core/package-root.js";
import { SETTINGS } from "./settings.js";
import { SETTINGS_PAGE, settingsTables, withSettingsTables } from "./settings-doc.js";

const page = readFileSync(join(PACKAGE_ROOT, SETTINGS_PAGE), "utf8");

test("docs/settings.md's settings tables match the rows (run `npm run docs:settings` after changing them)", () => {
  expect(page).toBe(withSettingsTables(page));
});

test("every row is in a table, once", () => {
  const lines = settingsTables().split("\n");
  for (const row of SETTINGS)
    expect(
      lines.filter((l) => l.startsWith(`| \`${row.env}\``)),
      row.env,
    ).toHaveLength(1);
});
