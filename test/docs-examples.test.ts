/**
 * The README's client excerpts are the examples' own lines: a code block whose first line names a
 * file under examples/ holds, in order, lines of that file (comment lines of the excerpt aside, and a
 * line may leave out the file line's trailing comment). test/examples/examples.test.ts runs the files.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { REPO_ROOT } from "../stack/paths.js";

/** The code blocks of a Markdown page, each as its lines. */
function codeBlocks(text: string): string[][] {
  return [...text.matchAll(/^```\w*\n([\s\S]*?)^```$/gm)].map((m) => (m[1] as string).replace(/\n$/, "").split("\n"));
}

const isComment = (line: string): boolean => line.startsWith("//") || line.startsWith("#");

/** The excerpt's lines that are not in `source` in its order, or [] when all are. */
function notInOrder(excerpt: string[], source: string[]): string[] {
  const lines = source.map((l) => l.trim());
  const missing: string[] = [];
  let at = 0;
  for (const line of excerpt.map((l) => l.trim()).filter((l) => l !== "" && !isComment(l))) {
    const found = lines.findIndex((l, i) => i >= at && (l === line || (l.startsWith(line) && /^\s+(#|\/\/)/.test(l.slice(line.length)))));
    if (found < 0) missing.push(line);
    else at = found + 1;
  }
  return missing;
}

test("the README's Java and Python excerpts are lines of the examples they name, in order", () => {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const excerpts = codeBlocks(readme).flatMap((block) => {
    const file = /^(?:\/\/|#)\s*(examples\/\S+?\.(?:java|py|go)),?\s/.exec(block[0] ?? "")?.[1];
    return file ? [{ file, block }] : [];
  });
  expect(excerpts.map((e) => e.file.split(".").pop())).toEqual(["java", "py"]);
  for (const { file, block } of excerpts)
    expect(notInOrder(block, readFileSync(join(REPO_ROOT, file), "utf8").split("\n")), file).toEqual([]);
});
