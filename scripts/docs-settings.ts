/** `npm run docs:settings`: rewrites the settings tables of docs/settings.md from src/config/settings.ts. */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SETTINGS_PAGE, withSettingsTables } from "../src/config/settings-doc.js";

const page = join(import.meta.dirname, "..", SETTINGS_PAGE);
const before = readFileSync(page, "utf8");
const after = withSettingsTables(before);
if (after !== before) writeFileSync(page, after);
process.stdout.write(`${SETTINGS_PAGE} settings tables ${after === before ? "unchanged" : "rewritten"}\n`);
