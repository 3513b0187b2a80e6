/**
 * The architecture, checked: imports inside src/ point only downward through the layers below, and
 * no file imports itself through others (type-only imports included: a circle means no file in it
 * can be read first). A new folder must be given a layer here. And test/'s folders are named for
 * the src/ folders they test.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { expect, test } from "vitest";

const SRC = join(dirname(new URL(import.meta.url).pathname), "..", "..", "src");

/** Lowest first. A folder may import its own files and the folders of lower layers only. */
const LAYERS: string[][] = [
  ["core"],
  ["config"],
  ["registry"],
  ["protocol"],
  ["sequences"],
  ["storage", "redis"],
  ["ownership", "recording"],
  ["hooks", "transport"],
  ["issuing"],
  ["ops"],
  ["recovery", "audit"],
  ["worker", "client"],
  ["cli"],
  ["index.ts"],
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return p.endsWith(".ts") && !p.endsWith(".test.ts") ? [p] : [];
  });
}

/** Every relative import (static, dynamic, type-only, re-export) of every file, as resolved paths. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    graph.set(
      file,
      importedFiles.filter((i) => i.fileName.startsWith(".")).map((i) => resolve(dirname(file), i.fileName.replace(/\.js$/, ".ts"))),
    );
  }
  return graph;
}

/** The layer folder of a file: its first folder under src/, or the file's name at the top. */
const folderOf = (file: string) => relative(SRC, file).split("/")[0] as string;

test("every folder of src/ has a layer", () => {
  const placed = new Set(LAYERS.flat());
  const folders = [...new Set([...importGraph().keys()].map(folderOf))];
  expect(folders.filter((f) => !placed.has(f))).toEqual([]);
});

/** Folders of test/ that test no one folder of src/: the whole system, or the tests' own tools. */
const TEST_KINDS = ["architecture", "bench", "chaos", "examples", "fixtures", "stack", "support"];

test("the folders of test/ mirror src/: each tests the src/ folder of its name, or is one of the kinds above", () => {
  const srcFolders = new Set(readdirSync(SRC).filter((f) => statSync(join(SRC, f)).isDirectory()));
  const testDir = join(SRC, "..", "test");
  const folders = readdirSync(testDir).filter((f) => statSync(join(testDir, f)).isDirectory());
  expect(folders.filter((f) => !srcFolders.has(f) && !TEST_KINDS.includes(f))).toEqual([]);
});

test("imports point only to lower layers", () => {
  const rank = new Map(LAYERS.flatMap((names, i) => names.map((n) => [n, i] as const)));
  const upward: string[] = [];
  for (const [file, imports] of importGraph()) {
    const from = folderOf(file);
    for (const target of imports) {
      const to = folderOf(target);
      if (to === from) continue;
      if ((rank.get(to) ?? Number.POSITIVE_INFINITY) >= (rank.get(from) ?? -1))
        upward.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
    }
  }
  expect(upward).toEqual([]);
});

/**
 * Inside issuing/: each number source's folder (sources/counter/, sources/snowflake/, sources/gapless/)
 * imports no other source's folder, and of issuing/ only what every source shares (the batch, the
 * outcomes, the Redis guard): the dispenser calls sources, never the other way round.
 */
test("number sources import no other source, and of issuing/ only what they share", () => {
  const issuing = join(SRC, "issuing");
  const sources = join(issuing, "sources");
  const shared = ["batch.ts", "outcome.ts", "redis-guard.ts"].map((f) => join(issuing, f));
  /** The source folder a file is in (counter, snowflake, gapless); undefined for files outside them. */
  const folder = (file: string) => {
    const parts = relative(sources, file).split("/");
    return parts.length > 1 && parts[0] !== ".." ? parts[0] : undefined;
  };
  const wrong: string[] = [];
  for (const [file, imports] of importGraph()) {
    const from = folder(file);
    if (from === undefined) continue;
    for (const target of imports) {
      const to = folder(target);
      const otherSource = to !== undefined && to !== from;
      const restOfIssuing =
        to === undefined && target.startsWith(`${issuing}/`) && !target.startsWith(`${sources}/`) && !shared.includes(target);
      if (otherSource || restOfIssuing) wrong.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
    }
  }
  expect(wrong).toEqual([]);
});

test("no import circles, type-only imports included", () => {
  const graph = importGraph();
  const circles: string[] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, "open");
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === "open") circles.push([...stack.slice(stack.indexOf(next)), next].map((f) => relative(SRC, f)).join(" -> "));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  expect(circles).toEqual([]);
});

/** What `source` imports from kafkajs as values ("line: name"): only types may be, kafkajs itself comes from `loadKafkajs`. */
function kafkajsValueImports(source: string): string[] {
  const file = ts.createSourceFile("x.ts", source, ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  for (const s of file.statements) {
    if (!ts.isImportDeclaration(s) || !ts.isStringLiteral(s.moduleSpecifier) || !/^kafkajs(\/|$)/.test(s.moduleSpecifier.text)) continue;
    const clause = s.importClause;
    const line = file.getLineAndCharacterOfPosition(s.getStart()).line + 1;
    if (!clause) out.push(`${line}: ${s.moduleSpecifier.text} for its side effects`);
    else if (!clause.isTypeOnly) {
      if (clause.name) out.push(`${line}: ${clause.name.text}`);
      const named = clause.namedBindings;
      if (named && ts.isNamespaceImport(named)) out.push(`${line}: * as ${named.name.text}`);
      if (named && ts.isNamedImports(named)) for (const e of named.elements) if (!e.isTypeOnly) out.push(`${line}: ${e.name.text}`);
    }
  }
  return out;
}

test("src/ and stack/ take kafkajs from loadKafkajs only: no file imports a kafkajs value, so none loads it before idd's modules are in place", () => {
  // stack/ too: `idd start` and `idd worker` with nothing configured load it into the worker's process.
  const root = join(SRC, "..");
  const files = [...sourceFiles(SRC), ...sourceFiles(join(root, "stack"))];
  const found = files.flatMap((f) => kafkajsValueImports(readFileSync(f, "utf8")).map((i) => `${relative(root, f)}:${i}`));
  expect(found).toEqual([]);
});

test("the kafkajs check finds value imports and lets types through", () => {
  expect(
    kafkajsValueImports(
      'import type { Admin } from "kafkajs";\nimport { type Consumer, Kafka } from "kafkajs";\nimport k from "kafkajs";\nimport "kafkajs/src/x.js";',
    ),
  ).toEqual(["2: Kafka", "3: k", "4: kafkajs/src/x.js for its side effects"]);
});
