/**
 * Every relative link of the README and the docs/ pages (and of the other READMEs) resolves: the
 * file exists, and a `#anchor` is one a heading of the target produces under GitHub's rules. And
 * the README, the front door, links every docs/ page.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { expect, test } from "vitest";
import { REPO_ROOT } from "../stack/paths.js";

/** The pages whose links are checked, relative to the repository's root. */
function pages(): string[] {
  const docs = readdirSync(join(REPO_ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`);
  const examples = readdirSync(join(REPO_ROOT, "examples"))
    .map((d) => `examples/${d}/README.md`)
    .filter((f) => existsSync(join(REPO_ROOT, f)));
  return ["README.md", ...docs, "test/chaos/README.md", ...examples].filter((f) => existsSync(join(REPO_ROOT, f)));
}

/** The page's lines outside fenced code blocks (``` or ~~~), with their 1-based numbers. */
function proseLines(text: string): [line: string, n: number][] {
  const out: [string, number][] = [];
  let fence: string | undefined;
  text.split("\n").forEach((line, i) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (fence === undefined || marker.startsWith(fence))) fence = fence === undefined ? marker : undefined;
    else if (fence === undefined) out.push([line, i + 1]);
  });
  return out;
}

/** GitHub's anchor for a heading's text: lowercase, punctuation dropped but '-' and '_', each space a '-'. */
function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors a page's headings produce; a repeated one gets -1, -2, … as on GitHub. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [line] of proseLines(text)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const m of text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) out.add(m[1] as string);
  return out;
}

/** The relative link targets of a page's prose (inline links and images, reference definitions). */
function links(text: string): [target: string, n: number][] {
  const out: [string, number][] = [];
  for (const [raw, n] of proseLines(text)) {
    const line = raw.replace(/`[^`]*`/g, "");
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push([m[1] as string, n]);
    const ref = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(line);
    if (ref) out.push([ref[1] as string, n]);
  }
  return out.filter(([t]) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

/** What is wrong with one link of `page` (relative to the root), or undefined when it resolves. */
function problem(page: string, target: string): string | undefined {
  const [path = "", anchor] = target.split("#", 2);
  const file = path === "" ? join(REPO_ROOT, page) : resolve(dirname(join(REPO_ROOT, page)), decodeURIComponent(path));
  if (!existsSync(file)) return `no file ${relative(REPO_ROOT, file)}`;
  if (anchor === undefined || anchor === "") return undefined;
  if (statSync(file).isDirectory() || !file.endsWith(".md")) return `#${anchor} on a file that is not a Markdown page`;
  const known = anchors(readFileSync(file, "utf8"));
  return known.has(decodeURIComponent(anchor)) ? undefined : `no heading of ${relative(REPO_ROOT, file)} makes #${anchor}`;
}

test("GitHub's anchors for headings as the docs write them", () => {
  expect(slug("Wire contract")).toBe("wire-contract");
  expect(slug("2. Guarantees (G1–G6)")).toBe("2-guarantees-g1g6");
  expect(slug("5.6 Redis lost its data or went back in time (flush, restart, failover)")).toBe(
    "56-redis-lost-its-data-or-went-back-in-time-flush-restart-failover",
  );
  expect(slug("The local stack (no Docker needed)")).toBe("the-local-stack-no-docker-needed");
  expect(slug("5.10 Replay (`idd replay`), also while workers run")).toBe("510-replay-idd-replay-also-while-workers-run");
  expect(slug("Wire contract → Routing")).toBe("wire-contract--routing");
  expect(slug("snake_case and [a link](x.md)")).toBe("snake_case-and-a-link");
});

test("every relative link of the README and docs/ points at a file and a heading that exist", () => {
  const broken: string[] = [];
  let checked = 0;
  for (const page of pages())
    for (const [target, n] of links(readFileSync(join(REPO_ROOT, page), "utf8"))) {
      checked++;
      const why = problem(page, target);
      if (why) broken.push(`${page}:${n}: (${target}) ${why}`);
    }
  expect(broken).toEqual([]);
  expect(checked, "links found: the parser reads the pages").toBeGreaterThan(100);
});

test("the README links every docs/ page", () => {
  const linked = new Set(links(readFileSync(join(REPO_ROOT, "README.md"), "utf8")).map(([t]) => t.split("#")[0]));
  expect(pages().filter((p) => p.startsWith("docs/") && !linked.has(p))).toEqual([]);
});
