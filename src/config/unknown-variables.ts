/**
 * IDD_* environment variables no row of the settings table names: most likely a typo, which would
 * otherwise leave a setting at its default without a word. Warned about once at start, with the
 * closest known name when one is near (IDD_SESION_TIMEOUT_MS → IDD_SESSION_TIMEOUT_MS).
 */
import type { Logger } from "pino";
import { SETTINGS } from "./settings.js";

const PREFIX = "IDD_";

/** Every IDD_* name idd or its tooling reads: the rows, and the _FILE form of secrets. */
export const KNOWN_VARIABLES: ReadonlySet<string> = new Set(
  SETTINGS.flatMap((r) => ("file" in r && r.file ? [r.env, `${r.env}_FILE`] : [r.env])).filter((n) => n.startsWith(PREFIX)),
);

export interface UnknownVariable {
  name: string;
  /** The known name it most likely meant, if one is close. */
  closest?: string;
}

/** Edit distance (insertions, deletions, substitutions), one row at a time. */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min((row[j] ?? 0) + 1, (next[j - 1] ?? 0) + 1, (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length] ?? 0;
}

/** The known name nearest to `name`, if it is within a few edits (and a small share of its length). */
export function closestVariable(name: string): string | undefined {
  let best: { known: string; d: number } | undefined;
  for (const known of KNOWN_VARIABLES) {
    const d = distance(name, known);
    if (!best || d < best.d) best = { known, d };
  }
  return best && best.d <= Math.min(3, Math.floor(name.length / 5)) ? best.known : undefined;
}

/** The IDD_* variables of `env` that no setting names, in name order. */
export function unknownVariables(env: NodeJS.ProcessEnv): UnknownVariable[] {
  return Object.keys(env)
    .filter((name) => name.startsWith(PREFIX) && !KNOWN_VARIABLES.has(name))
    .sort()
    .map((name) => {
      const closest = closestVariable(name);
      return closest ? { name, closest } : { name };
    });
}

/** One warn line listing the unknown IDD_* variables, if there are any. */
export function warnUnknownVariables(env: NodeJS.ProcessEnv, logger: Logger): void {
  const unknown = unknownVariables(env);
  if (unknown.length === 0) return;
  const list = unknown.map((u) => (u.closest ? `${u.name} (did you mean ${u.closest}?)` : u.name)).join(", ");
  logger.warn({ unknown: unknown.map((u) => u.name) }, `unknown IDD_* environment variables, not read by idd: ${list}`);
}
