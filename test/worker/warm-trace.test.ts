/**
 * docs/design.md §6 names, in its warm-trace table, every src/ file one warm request runs code in:
 * measured by test/support/warm-trace.ts (a worker under V8's block coverage, five asks). A file
 * added to the request's way, or one it no longer passes, makes the table wrong, and this fails
 * naming it.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, inject, test } from "vitest";
import { REPO_ROOT } from "../../stack/paths.js";
import { ownDatabase, serviceEnv } from "../support/workers.js";

const services = ownDatabase(inject("services"), "warmtrace");

/** The files the table between the warm-trace markers names. */
function named(): string[] {
  const doc = readFileSync(join(REPO_ROOT, "docs/design.md"), "utf8");
  const table = doc.slice(doc.indexOf("<!-- warm-trace: begin -->"), doc.indexOf("<!-- warm-trace: end -->"));
  return [...table.matchAll(/`([^`]+\.ts)`/g)].map((m) => m[1] as string);
}

test("design.md's warm-trace table names exactly the files a warm request runs", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "test/support/warm-trace.ts"], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...serviceEnv(services) },
    timeout: 170_000,
  });
  const ran = stdout
    .trim()
    .split("\n")
    .map((l) => l.split("\t")[0] as string);
  const listed = named();
  expect(new Set(listed).size, "a file named twice").toBe(listed.length);
  expect({ unnamed: ran.filter((f) => !listed.includes(f)), notRun: listed.filter((f) => !ran.includes(f)) }).toEqual({
    unnamed: [],
    notRun: [],
  });
  expect(ran.length).toBeGreaterThan(20);
}, 180_000);
