import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { ErrorCodes } from "../src/core/errors.js";
import { REPO_ROOT } from "../stack/paths.js";

test("every error code is documented in docs/wire-contract.md (Error codes)", () => {
  const page = readFileSync(join(REPO_ROOT, "docs", "wire-contract.md"), "utf8");
  const undocumented = Object.keys(ErrorCodes).filter((c) => !page.includes(`\`${c}\``) && !page.includes(`\`${c.split("_")[0]}_*\``));
  expect(undocumented).toEqual([]);
});
