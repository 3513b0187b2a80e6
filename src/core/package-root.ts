/** The folder holding package.json, found from this file both in src/ (tsx) and in dist/src/ (built). */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

function find(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json")) && existsSync(join(dir, "lua"))) return dir;
    if (dirname(dir) === dir) throw new Error(`idd: package root not found above ${from}`);
  }
}

export const PACKAGE_ROOT = find(dirname(fileURLToPath(import.meta.url)));
