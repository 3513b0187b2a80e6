/** `npm run docs:settings`: rewrites the README's settings tables from src/config/settings.ts. */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { withSettingsTables } from "../src/config/settings-doc.js";

const readme = join(import.meta.dirname, "..", "README.md");
const before = readFileSync(readme, "utf8");
const after = withSettingsTables(before);
if (after !== before) writeFileSync(readme, after);
process.stdout.write(`README.md settings tables ${after === before ? "unchanged" : "rewritten"}\n`);
