/**
 * Obfuscation keys: AES keys by version (0-9), read from an environment variable or a file that the
 * configuration names, and never printed.
 *
 *   IDD_OBFUSCATION_KEYS="1:q5mG0C3kYz1b7oJ8Xv2L0g==,2:pY3tHn6c0T8yF1wR5uKe9Q=="
 *   IDD_OBFUSCATION_KEYS_FILE=/run/secrets/idd-obfuscation-keys     one `version:base64key` a line
 *
 * - In the variable, entries are separated by commas (or new lines); in the file, one a line, and blank
 *   lines and lines starting with # are skipped.
 * - A key is base64 (standard or URL-safe alphabet, padding optional) of 16, 24 or 32 bytes: AES-128,
 *   -192 or -256. Generate one with `openssl rand -base64 32`.
 * - Every problem is reported at once (CONFIG_INVALID), each by its entry or line number and version:
 *   no message ever holds any part of an entry's text, which could be key material.
 * - Keep every version whose values must still decode; a sequence encodes with its current version.
 * - ObfuscationKeys prints and serialises as its versions only (util.inspect, JSON.stringify, pino).
 */
import { readFileSync } from "node:fs";
import { inspect } from "node:util";
import { OBFUSCATION_KEYS_ENV, OBFUSCATION_KEYS_FILE_ENV, type ObfuscationKeyText, obfuscationKeySource } from "../../config/config.js";
import { IddError } from "../../core/errors.js";
import { isKeyVersion, ObfuscatedDomain } from "./domain.js";
import { FF1_AES_KEY_BYTES } from "./ff1.js";

/** The variables the keys are read from (src/config/settings.ts): the keys, or a file of them. */
export { OBFUSCATION_KEYS_ENV, OBFUSCATION_KEYS_FILE_ENV };

/** Where keys are read from: an environment variable that holds them, or a file. */
export type KeySource = { readonly env: string } | { readonly file: string };

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$|^[A-Za-z0-9_-]+={0,2}$/;

export class ObfuscationKeys {
  /** Where the keys came from, for messages: a variable's name or a file's path. */
  readonly origin: string;
  readonly #keys: ReadonlyMap<number, Buffer>;

  constructor(origin: string, keys: ReadonlyMap<number, Buffer>) {
    this.origin = origin;
    this.#keys = new Map(keys);
  }

  /** Versions with a key, ascending. */
  get versions(): number[] {
    return [...this.#keys.keys()].sort((a, b) => a - b);
  }

  has(version: number): boolean {
    return this.#keys.has(version);
  }

  /**
   * The domain of one sequence: its values are `digits` wide and encode with `currentVersion`; every
   * version decodes. The sequence name is the FF1 tweak. CONFIG_INVALID if currentVersion has no key.
   */
  /**
   * The domain of a sequence's values. The FF1 tweak is the sequence name, followed by a NUL and
   * `context` when given: a formatted sequence passes the dates its template prints, so serials that
   * restart each period are encoded under a different permutation each period (domain.ts).
   */
  domain(spec: {
    readonly sequence: string;
    readonly digits: number;
    readonly currentVersion: number;
    readonly context?: string;
  }): ObfuscatedDomain {
    if (!this.#keys.has(spec.currentVersion))
      throw new IddError(
        "CONFIG_INVALID",
        `sequence "${spec.sequence}" encodes with obfuscation key version ${spec.currentVersion}, which ${this.origin} does not hold (it holds ${this.versions.join(", ") || "none"})`,
      );
    return new ObfuscatedDomain({
      digits: spec.digits,
      keys: this.#keys,
      currentVersion: spec.currentVersion,
      tweak: Buffer.from(spec.context === undefined ? spec.sequence : `${spec.sequence}\u0000${spec.context}`, "utf8"),
    });
  }

  toJSON(): { origin: string; versions: number[] } {
    return { origin: this.origin, versions: this.versions };
  }

  [inspect.custom](): string {
    return `ObfuscationKeys { origin: ${JSON.stringify(this.origin)}, versions: [${this.versions.join(", ")}] }`;
  }
}

/** The source the environment names: the file if IDD_OBFUSCATION_KEYS_FILE is set, else IDD_OBFUSCATION_KEYS; undefined if neither is. */
export function keySourceFromEnv(env: NodeJS.ProcessEnv): KeySource | undefined {
  const problems: string[] = [];
  const source = obfuscationKeySource(env, problems);
  if (problems.length > 0) throw new IddError("CONFIG_INVALID", `configuration:\n${problems.join("\n")}`);
  return source;
}

/** Parses and checks the keys the configuration read (loadConfig). CONFIG_INVALID with every problem. */
export function obfuscationKeysOf(given: ObfuscationKeyText): ObfuscationKeys {
  const text = given.text.reveal();
  if (given.unit === "entry" && text.trim() === "") throw new IddError("CONFIG_INVALID", `obfuscation keys: ${given.origin} is not set`);
  return parseObfuscationKeys(text, given.origin, given.unit);
}

/** Reads and checks the keys of a source; a variable's text is taken from `env`. CONFIG_INVALID with every problem. */
export function loadObfuscationKeys(source: KeySource, env: NodeJS.ProcessEnv = {}): ObfuscationKeys {
  if ("file" in source) {
    let text: string;
    try {
      text = readFileSync(source.file, "utf8");
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? "unreadable";
      throw new IddError("CONFIG_INVALID", `obfuscation keys: cannot read ${source.file} (${code})`, { cause: e });
    }
    return parseObfuscationKeys(text, source.file, "line");
  }
  const text = env[source.env];
  if (text === undefined || text.trim() === "") throw new IddError("CONFIG_INVALID", `obfuscation keys: ${source.env} is not set`);
  return parseObfuscationKeys(text, source.env, "entry");
}

/**
 * Parses `version:base64key` entries: separated by commas or new lines (unit "entry"), or one a line
 * with blank and # lines skipped (unit "line"). `origin` and `unit` shape the messages only:
 * "obfuscation keys in IDD_OBFUSCATION_KEYS:\nentry 2 (version 2): …", "… /run/keys:\nline 3: …".
 */
export function parseObfuscationKeys(text: string, origin: string, unit: "entry" | "line" = "entry"): ObfuscationKeys {
  const problems: string[] = [];
  const keys = new Map<number, Buffer>();
  const firstAt = new Map<number, string>();
  const items: [entry: string, at: string][] =
    unit === "line"
      ? text.split(/\r?\n/).map((line, i) => [line.trim(), `line ${i + 1}`])
      : text
          .split(/[,\r\n]/)
          .map((e) => e.trim())
          .filter((e) => e !== "")
          .map((e, i) => [e, `entry ${i + 1}`]);
  for (const [entry, at] of items) {
    if (entry === "" || entry.startsWith("#")) continue;
    const colon = entry.indexOf(":");
    if (colon < 0) {
      problems.push(`${at}: not version:base64key`);
      continue;
    }
    const versionText = entry.slice(0, colon).trim();
    const version = /^[0-9]$/.test(versionText) ? Number(versionText) : Number.NaN;
    if (!isKeyVersion(version)) {
      problems.push(`${at}: the version is not one digit 0-9`);
      continue;
    }
    const key = decodeKey(entry.slice(colon + 1).trim());
    if (typeof key === "string") {
      problems.push(`${at} (version ${version}): ${key}`);
      continue;
    }
    const first = firstAt.get(version);
    if (first !== undefined) {
      problems.push(`${at}: version ${version} is given twice (first at ${first})`);
      continue;
    }
    const same = [...keys].find(([, k]) => k.equals(key));
    if (same) problems.push(`${at} (version ${version}): the same key as version ${same[0]}`);
    firstAt.set(version, at);
    keys.set(version, key);
  }
  if (keys.size === 0 && problems.length === 0) problems.push("no keys: expected version:base64key entries, comma-separated or one a line");
  if (problems.length > 0) throw new IddError("CONFIG_INVALID", `obfuscation keys in ${origin}:\n${problems.join("\n")}`);
  return new ObfuscationKeys(origin, keys);
}

/** The key's bytes, or what is wrong with it (in words that hold none of it). */
function decodeKey(text: string): Buffer | string {
  if (text === "") return "the key is empty";
  if (!BASE64.test(text) || text.replace(/=+$/, "").length % 4 === 1) return "the key is not base64";
  const key = Buffer.from(text, text.includes("-") || text.includes("_") ? "base64url" : "base64");
  // Buffer.from ignores stray bits; re-encoding catches a key that does not round-trip.
  if (key.toString("base64url") !== text.replace(/=+$/, "").replaceAll("+", "-").replaceAll("/", "_")) return "the key is not base64";
  if (!FF1_AES_KEY_BYTES.includes(key.length)) return `the key is ${key.length} bytes; AES keys are 16, 24 or 32 bytes`;
  if (key.every((byte) => byte === 0)) return "the key is all zero bytes (a placeholder?)";
  return key;
}
