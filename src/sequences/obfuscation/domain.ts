/**
 * Obfuscated values: a sequence's serials (0, 1, 2, … from its counter) printed as fixed-width decimal
 * numbers with no visible rule, so that two values reveal neither how many were issued between them
 * nor in what order.
 *
 *   digits 10, key version 1 (key 000102…0f), tweak "orders":
 *   serial 0 → 1375382858   serial 1 → 1408242466   serial 2 → 1296713141
 *
 * A value is the key version (one digit, 0-9) followed by FF1 (ff1.ts, NIST SP 800-38G) under that
 * version's key of the serial zero-padded to digits - 1:
 *
 *   value = version || FF1_key[version](serial as digits - 1 decimal digits)
 *
 * - Unique by construction: FF1 is a permutation of the (digits - 1)-digit strings, so distinct serials
 *   give distinct values under one key; values under different keys differ in their first digit. A key
 *   rotation (new currentVersion) cannot collide with anything issued before it, which it could if the
 *   version were not printed: FF1_k1(s1) = FF1_k2(s2) happens for about one pair in 10^(digits-1).
 *   The serials must be unique themselves: a counter that restarts (per period) needs the period in the
 *   tweak or printed beside the value.
 * - Reversible: decode reads the version, decrypts with that version's key and returns the serial, so a
 *   value can be traced back to its issuance record. Decode authenticates nothing: every well-formed
 *   value of a configured version decodes to some serial, issued or not.
 * - Serial range: exactly [0, 10^(digits - 1)), the whole FF1 domain, so no cycle-walking is needed
 *   (that is for a domain [0, N) with N not a power of the radix: re-encrypt until the result is < N).
 *   A serial past it is refused (SERIAL_OVERFLOW); the sequence's maxValue should stop below it.
 * - Widths: 7-18 digits. FF1 needs a domain of at least 10^6 (SP 800-38G Rev. 1), so at least 6 digits
 *   after the version; 18 is the widest `{seq:N}` (format.ts), and 10^17 serials outlast every counter.
 * - What it costs: one digit of width, and the version digit tells which key period a value is from.
 * - The tweak (public, default empty) separates sequences sharing keys: keys.ts passes the sequence name,
 *   so two sequences of the same width do not issue the same values in the same order.
 */
import { IddError } from "../../core/errors.js";
import { FF1, FF1_AES_KEY_BYTES } from "./ff1.js";

export const MIN_OBFUSCATED_DIGITS = 7;
export const MAX_OBFUSCATED_DIGITS = 18;
/** Key versions are one decimal digit. */
export const MAX_KEY_VERSION = 9;

export interface ObfuscatedDomainOptions {
  /** Width of every value, version digit included: 7-18. */
  readonly digits: number;
  /** AES keys (16, 24 or 32 bytes) by version 0-9: every version whose values must still decode. */
  readonly keys: ReadonlyMap<number, Uint8Array>;
  /** The version new values are encoded with. */
  readonly currentVersion: number;
  /** FF1 tweak shared by every version (default empty). */
  readonly tweak?: Uint8Array;
}

export interface DecodedValue {
  readonly serial: bigint;
  readonly version: number;
}

/** Why `digits` cannot be an obfuscated width, or null: for validating a sequence definition. */
export function obfuscatedDigitsProblem(digits: number): string | null {
  if (Number.isInteger(digits) && digits >= MIN_OBFUSCATED_DIGITS && digits <= MAX_OBFUSCATED_DIGITS) return null;
  return `digits must be an integer ${MIN_OBFUSCATED_DIGITS}-${MAX_OBFUSCATED_DIGITS} (a version digit and at least 6 FF1 digits), got ${digits}`;
}

export function isKeyVersion(version: number): boolean {
  return Number.isInteger(version) && version >= 0 && version <= MAX_KEY_VERSION;
}

const DIGITS = /^[0-9]+$/;

export class ObfuscatedDomain {
  readonly digits: number;
  readonly currentVersion: number;
  /** encode accepts serials in [0, size): size = 10^(digits - 1). */
  readonly size: bigint;
  /** The versions that decode, ascending. */
  readonly versions: readonly number[];
  /** Digits FF1 permutes: digits - 1. */
  readonly #length: number;
  readonly #ciphers = new Map<number, FF1>();

  /** Throws CONFIG_INVALID listing every problem (never a key's bytes). */
  constructor(options: ObfuscatedDomainOptions) {
    const { digits, keys, currentVersion, tweak } = options;
    const problems: string[] = [];
    const digitsProblem = obfuscatedDigitsProblem(digits);
    if (digitsProblem) problems.push(digitsProblem);
    for (const [version, key] of keys) {
      if (!isKeyVersion(version)) problems.push(`key version ${version} is not one digit 0-${MAX_KEY_VERSION}`);
      else if (!FF1_AES_KEY_BYTES.includes(key.length))
        problems.push(`key version ${version} is ${key.length} bytes; AES keys are 16, 24 or 32 bytes`);
    }
    if (!isKeyVersion(currentVersion)) problems.push(`the current key version ${currentVersion} is not one digit 0-${MAX_KEY_VERSION}`);
    else if (!keys.has(currentVersion)) problems.push(`the current key version ${currentVersion} has no key`);
    if (problems.length > 0) throw new IddError("CONFIG_INVALID", `obfuscated domain:\n${problems.join("\n")}`);
    this.digits = digits;
    this.currentVersion = currentVersion;
    this.#length = digits - 1;
    this.size = 10n ** BigInt(this.#length);
    const versions = [...keys.keys()].sort((a, b) => a - b);
    for (const version of versions) this.#ciphers.set(version, new FF1(keys.get(version) as Uint8Array, { radix: 10, tweak }));
    this.versions = Object.freeze(versions);
  }

  /** The value of one serial under the current key. SERIAL_OVERFLOW past size - 1. */
  encode(serial: bigint): string {
    return this.encodeAll([serial])[0] as string;
  }

  /** The values of many serials, in order: faster per value than encode (AES calls are shared). */
  encodeAll(serials: readonly bigint[]): string[] {
    for (const serial of serials) this.#check(serial);
    const prefix = String(this.currentVersion);
    const cipher = this.#ciphers.get(this.currentVersion) as FF1;
    return cipher.encryptAll(this.#length, serials).map((x) => prefix + x.toString().padStart(this.#length, "0"));
  }

  /** The serial and key version of a value: OBFUSCATED_VALUE_INVALID if it is malformed or its version has no key. */
  decode(value: string): DecodedValue {
    return this.decodeAll([value])[0] as DecodedValue;
  }

  /** decode for many values, in order (one batch per key version). */
  decodeAll(values: readonly string[]): DecodedValue[] {
    const byVersion = new Map<number, number[]>();
    const ciphertexts: bigint[] = [];
    values.forEach((value, at) => {
      const version = this.#versionOf(value);
      ciphertexts.push(BigInt(value.slice(1)));
      const positions = byVersion.get(version);
      if (positions) positions.push(at);
      else byVersion.set(version, [at]);
    });
    const out = new Array<DecodedValue>(values.length);
    for (const [version, positions] of byVersion) {
      const cipher = this.#ciphers.get(version) as FF1;
      const serials = cipher.decryptAll(
        this.#length,
        positions.map((at) => ciphertexts[at] as bigint),
      );
      positions.forEach((at, k) => {
        out[at] = { serial: serials[k] as bigint, version };
      });
    }
    return out;
  }

  /** What logs and JSON show: never a key. */
  toJSON(): { digits: number; currentVersion: number; versions: readonly number[] } {
    return { digits: this.digits, currentVersion: this.currentVersion, versions: this.versions };
  }

  #check(serial: bigint): void {
    if (typeof serial !== "bigint" || serial < 0n) throw new RangeError(`an obfuscated serial is a bigint ≥ 0 (got ${String(serial)})`);
    if (serial >= this.size)
      throw new IddError(
        "SERIAL_OVERFLOW",
        `serial ${serial} does not fit an obfuscated value of ${this.digits} digits (serials 0 to ${this.size - 1n})`,
      );
  }

  #versionOf(value: string): number {
    const shown = typeof value === "string" ? `"${value.slice(0, 40)}"` : typeof value;
    if (typeof value !== "string" || value.length !== this.digits || !DIGITS.test(value))
      throw new IddError("OBFUSCATED_VALUE_INVALID", `${shown} is not an obfuscated value: expected ${this.digits} decimal digits`);
    const version = value.charCodeAt(0) - 48;
    if (!this.#ciphers.has(version))
      throw new IddError(
        "OBFUSCATED_VALUE_INVALID",
        `${shown} has key version ${version}, which has no key (versions with keys: ${this.versions.join(", ")})`,
      );
    return version;
  }
}
