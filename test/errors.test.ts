import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { ErrorCodes } from "../src/core/errors.js";
import { REPO_ROOT } from "../stack/paths.js";

test("every error code is documented in the README", () => {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const undocumented = Object.keys(ErrorCodes).filter((c) => !readme.includes(`\`${c}\``) && !readme.includes(`\`${c.split("_")[0]}_*\``));
  expect(undocumented).toEqual([]);
});
