/**
 * One Kafka admin for the tests, the harnesses and the stack: stack/kafka-admin.ts, whose every
 * answer about a topic waits until each broker serves it. A kafkajs admin made anywhere else in
 * test/ or stack/ reads whichever broker it reaches, and on a fresh cluster that broker may not
 * know a topic another one has just created ("This server does not host this topic-partition").
 * This check fails on such an admin: a call of `.admin()` (on a kafkajs client or idd's
 * KafkaConnection), kafkajs's `Admin` type imported, or the seam's admin module imported directly.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import ts from "typescript";
import { expect, test } from "vitest";

const ROOT = join(dirname(new URL(import.meta.url).pathname), "..", "..");
/** The one file allowed to make a Kafka admin. */
const HELPER = "stack/kafka-admin.ts";

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return f === "node_modules" || f === "fixtures" ? [] : files(p);
    return /\.(ts|mts|mjs|js)$/.test(p) ? [p] : [];
  });
}

/** Where `source` makes or types a Kafka admin of its own: "line: what". */
function rawAdmins(source: string, name = "x.ts"): string[] {
  const sf = ts.createSourceFile(name, source, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (n: ts.Node, what: string) => found.push(`${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1}: ${what}`);
  const visit = (n: ts.Node) => {
    if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && /^admin(At)?$/.test(n.expression.name.text))
      at(n, `${n.expression.getText()}()`);
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) {
      const from = n.moduleSpecifier.text;
      if (/transport\/kafka\/(admin|connection)(\.js)?$/.test(from)) at(n, `imports ${from}`);
      const named = n.importClause?.namedBindings;
      if (from === "kafkajs" && named && ts.isNamedImports(named))
        for (const e of named.elements) if ((e.propertyName ?? e.name).text === "Admin") at(e, "imports kafkajs's Admin");
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found;
}

test("the check finds an admin made of kafkajs or of the seam, and nothing in the helper's callers", () => {
  expect(rawAdmins('import { Kafka } from "kafkajs";\nconst a = new Kafka({ brokers: [] }).admin();')).toEqual([
    "2: new Kafka({ brokers: [] }).admin()",
  ]);
  expect(rawAdmins('import { type Admin } from "kafkajs";')).toEqual(["1: imports kafkajs's Admin"]);
  expect(rawAdmins('import { KafkaAdmin } from "../src/transport/kafka/admin.js";')).toEqual([
    "1: imports ../src/transport/kafka/admin.js",
  ]);
  expect(rawAdmins('const a = new ServedAdmin(["b:1"]);\nawait a.topicOffsets("t");')).toEqual([]);
});

test("no file of test/ or stack/ makes a Kafka admin outside stack/kafka-admin.ts", () => {
  const offenders = ["test", "stack"]
    .flatMap((d) => files(join(ROOT, d)))
    .filter((f) => relative(ROOT, f) !== HELPER)
    .flatMap((f) => rawAdmins(readFileSync(f, "utf8"), f).map((w) => `${relative(ROOT, f)}:${w}`));
  expect(offenders, `use ServedAdmin (${HELPER}) instead`).toEqual([]);
});
