/** `promtool` (Debian's prometheus package, installed on first use by stack/install.ts) over the repository's alerting rules. */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensurePromtool } from "../../stack/install.js";
import { layoutFromEnv, REPO_ROOT } from "../../stack/paths.js";

export const RULES_DIR = join(REPO_ROOT, "ops/prometheus");
export const RULES = join(RULES_DIR, "idd-rules.yml");
export const RULE_TESTS = join(RULES_DIR, "idd-rules.test.yml");

export interface PromtoolRun {
  status: number | null;
  /** stdout and stderr together, as a person reads them. */
  output: string;
}

export async function promtool(args: string[], cwd = RULES_DIR): Promise<PromtoolRun> {
  const bin = await ensurePromtool(layoutFromEnv(), () => {});
  const r = spawnSync(bin, args, { cwd, encoding: "utf8" });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/**
 * A folder holding `rules` (the repository's, or a changed copy) as idd-rules.yml and `tests`
 * (promtool's unit-test YAML naming rule_files: [idd-rules.yml]) as tests.yml: `promtool test rules tests.yml` there.
 */
export function rulesFolder(tests: string, rules?: string): string {
  const dir = mkdtempSync(join(tmpdir(), "idd-rules-"));
  if (rules === undefined) copyFileSync(RULES, join(dir, "idd-rules.yml"));
  else writeFileSync(join(dir, "idd-rules.yml"), rules);
  writeFileSync(join(dir, "tests.yml"), tests);
  return dir;
}
