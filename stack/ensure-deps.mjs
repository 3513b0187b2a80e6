#!/usr/bin/env node
// Runs before `npm start` and `npm test` so that a fresh clone needs no separate install step:
// installs node_modules with `npm ci` when they are missing or older than package-lock.json.
// Plain JavaScript on purpose: it must run before any dependency exists.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const lock = join(root, "package-lock.json");
const stamp = join(root, "node_modules", ".idd-lock-hash");
const want = createHash("sha256").update(readFileSync(lock)).digest("hex");
const have = existsSync(stamp) ? readFileSync(stamp, "utf8").trim() : "";

if (have !== want) {
  process.stderr.write("idd: installing node dependencies (npm ci)…\n");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const r = spawnSync(npm, ["ci", "--no-audit", "--no-fund"], { cwd: root, stdio: "inherit" });
  if (r.status !== 0) {
    process.stderr.write(`idd: npm ci failed (exit ${r.status ?? r.signal}); see the output above\n`);
    process.exit(1);
  }
  writeFileSync(stamp, want);
}
