/**
 * Secrets (passwords, tokens) and URLs that may carry them. A Secret prints as [redacted] however
 * it is printed (String, JSON.stringify, util.inspect, pino), so a settings object can be logged or
 * thrown around without thought; only `reveal()` hands out the value, at the one place that sends it.
 */
import { readFileSync } from "node:fs";
import { inspect } from "node:util";

const REDACTED = "[redacted]";

export class Secret {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }

  [inspect.custom](): string {
    return REDACTED;
  }
}

/**
 * A secret from `NAME` or from the file `NAME_FILE` names (trailing newlines dropped), the way
 * container platforms mount secrets; both set is a problem, since one would silently lose. Problems
 * name the variable or the file, never the value.
 */
export function secretFromEnv(env: Record<string, string | undefined>, name: string, problems: string[]): Secret | undefined {
  const value = env[name];
  const file = env[`${name}_FILE`];
  if (value && file) {
    problems.push(`${name} and ${name}_FILE are both set: set one`);
    return undefined;
  }
  if (value) return new Secret(value);
  if (!file) return undefined;
  try {
    const text = readFileSync(file, "utf8").replace(/[\r\n]+$/, "");
    if (text === "") problems.push(`${name}_FILE: ${file} is empty`);
    return new Secret(text);
  } catch (e) {
    problems.push(`${name}_FILE: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    return undefined;
  }
}

/** A URL as it may be printed: user name kept, password replaced (unparsable text is not printed at all). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    // Query parameters some drivers take secrets in (MongoDB's tlsCertificateKeyFilePassword, …).
    for (const k of [...u.searchParams.keys()]) if (/pass|secret|token/i.test(k)) u.searchParams.set(k, "***");
    return u.toString();
  } catch {
    return "(unparsable URL)";
  }
}

/** The value of a secret given either way (library callers may pass plain strings). */
export function reveal(s: string | Secret): string {
  return typeof s === "string" ? s : s.reveal();
}
