import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { isIddError } from "../../core/errors.js";
import { ObfuscatedDomain, obfuscatedDigitsProblem } from "./domain.js";
import { FF1 } from "./ff1.js";

const KEY_1 = Buffer.from("000102030405060708090a0b0c0d0e0f", "hex");
const KEY_2 = Buffer.from("f0e0d0c0b0a090807060504030201000f0e0d0c0b0a09080", "hex");
const KEYS = new Map([
  [1, KEY_1],
  [2, KEY_2],
]);

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    return isIddError(e) ? e.code : `not an IddError: ${e}`;
  }
  return undefined;
}

const serials = (from: number, count: number) => Array.from({ length: count }, (_, i) => BigInt(from + i));

describe("ObfuscatedDomain", () => {
  test("values are the version digit and FF1 of the zero-padded serial, fixed width", () => {
    const d = new ObfuscatedDomain({ digits: 10, keys: KEYS, currentVersion: 1, tweak: Buffer.from("orders") });
    expect(d.size).toBe(1_000_000_000n);
    const ff1 = new FF1(KEY_1, { tweak: Buffer.from("orders") });
    expect(d.encode(0n)).toBe(`1${ff1.encrypt("000000000")}`);
    expect(d.encode(999_999_999n)).toBe(`1${ff1.encrypt("999999999")}`);
    expect(d.encodeAll([0n, 1n, 2n])).toEqual(["1375382858", "1408242466", "1296713141"]); // domain.ts's header
    for (const v of d.encodeAll(serials(0, 1000))) expect(v).toMatch(/^1[0-9]{9}$/);
  });

  test("exhaustive: the 10^6 serials of a 7-digit domain give 10^6 distinct values, each decoding to its serial", () => {
    const d = new ObfuscatedDomain({ digits: 7, keys: new Map([[3, KEY_1]]), currentVersion: 3 });
    const all = serials(0, 1_000_000);
    const values = d.encodeAll(all);
    const seen = new Uint8Array(1_000_000);
    let problems = 0;
    for (const v of values) {
      const x = Number(v.slice(1));
      if (v.length !== 7 || v.charAt(0) !== "3" || seen[x] === 1) problems++;
      seen[x] = 1;
    }
    expect(problems).toBe(0);
    expect(seen.indexOf(0)).toBe(-1);
    const decoded = d.decodeAll(values);
    expect(decoded.filter((r, i) => r.serial !== all[i] || r.version !== 3)).toEqual([]);
  });

  test("10^5 issued values of a real width (12 digits) are distinct", () => {
    const d = new ObfuscatedDomain({ digits: 12, keys: KEYS, currentVersion: 2, tweak: Buffer.from("invoices") });
    const values = d.encodeAll(serials(1, 100_000));
    expect(new Set(values).size).toBe(100_000);
  });

  test("decode(encode(serial)) is the serial and the current version, for random serials of every width", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 7, max: 18 }),
        fc.bigInt({ min: 0n, max: 10n ** 17n - 1n }),
        fc.constantFrom(1, 2),
        (digits, s, version) => {
          const d = new ObfuscatedDomain({ digits, keys: KEYS, currentVersion: version });
          const serial = s % d.size;
          const value = d.encode(serial);
          expect(value).toHaveLength(digits);
          expect(d.decode(value)).toEqual({ serial, version });
        },
      ),
      { numRuns: 300 },
    );
  });

  test("two key versions never issue the same value, though their FF1 parts collide", () => {
    const before = new ObfuscatedDomain({ digits: 7, keys: KEYS, currentVersion: 1 });
    const after = new ObfuscatedDomain({ digits: 7, keys: KEYS, currentVersion: 2 });
    const v1 = before.encodeAll(serials(0, 100_000));
    const v2 = after.encodeAll(serials(100_000, 100_000));
    const issued = new Set(v1);
    expect(v2.filter((v) => issued.has(v))).toEqual([]);
    // Without the version digit: about 10^5 × 10^5 / 10^6 = 10^4 of the second key's values repeat the first's.
    const parts = new Set(v1.map((v) => v.slice(1)));
    const repeats = v2.filter((v) => parts.has(v.slice(1))).length;
    expect(repeats).toBeGreaterThan(8000);
    expect(repeats).toBeLessThan(12_000);
    // After the rotation, values of both versions still decode.
    expect(after.decode(v1[42] as string)).toEqual({ serial: 42n, version: 1 });
    expect(after.decode(v2[42] as string)).toEqual({ serial: 100_042n, version: 2 });
  });

  test("the tweak separates domains under one key", () => {
    const a = new ObfuscatedDomain({ digits: 10, keys: KEYS, currentVersion: 1, tweak: Buffer.from("a") });
    const b = new ObfuscatedDomain({ digits: 10, keys: KEYS, currentVersion: 1, tweak: Buffer.from("b") });
    expect(a.encodeAll(serials(0, 10))).not.toEqual(b.encodeAll(serials(0, 10)));
  });

  test("a serial past the domain is SERIAL_OVERFLOW; a negative one a RangeError", () => {
    const d = new ObfuscatedDomain({ digits: 7, keys: KEYS, currentVersion: 1 });
    expect(codeOf(() => d.encode(999_999n))).toBeUndefined();
    expect(codeOf(() => d.encode(1_000_000n))).toBe("SERIAL_OVERFLOW");
    expect(codeOf(() => d.encodeAll([1n, 10n ** 7n]))).toBe("SERIAL_OVERFLOW");
    expect(() => d.encode(-1n)).toThrow(RangeError);
  });

  test("decode refuses malformed values and versions without a key (OBFUSCATED_VALUE_INVALID)", () => {
    const d = new ObfuscatedDomain({ digits: 8, keys: KEYS, currentVersion: 1 });
    for (const bad of ["1234567", "123456789", "1234567a", " 1234567", "+1234567", "", "90000000"])
      expect(codeOf(() => d.decode(bad))).toBe("OBFUSCATED_VALUE_INVALID");
    expect(() => d.decode("30000000")).toThrow(/key version 3, which has no key \(versions with keys: 1, 2\)/);
    expect(codeOf(() => d.decodeAll([d.encode(5n), "9"]))).toBe("OBFUSCATED_VALUE_INVALID");
  });

  test("bad options are CONFIG_INVALID, every problem at once, with no key bytes", () => {
    const keys = new Map<number, Buffer>([
      [1, Buffer.alloc(20, 0xab)],
      [12, KEY_1],
    ]);
    let message = "";
    try {
      new ObfuscatedDomain({ digits: 6, keys, currentVersion: 4 });
    } catch (e) {
      expect(isIddError(e, "CONFIG_INVALID")).toBe(true);
      message = (e as Error).message;
    }
    expect(message.split("\n").slice(1)).toEqual([
      "digits must be an integer 7-18 (a version digit and at least 6 FF1 digits), got 6",
      "key version 1 is 20 bytes; AES keys are 16, 24 or 32 bytes",
      "key version 12 is not one digit 0-9",
      "the current key version 4 has no key",
    ]);
    expect(message).not.toMatch(/abab|q6ur|000102/i);
    expect(obfuscatedDigitsProblem(19)).toMatch(/7-18/);
    expect(obfuscatedDigitsProblem(18)).toBeNull();
  });
});
