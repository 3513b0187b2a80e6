import { randomBytes, randomInt } from "node:crypto";
import { describe, expect, test } from "vitest";
import { FF1 } from "./ff1.js";

const hex = (s: string) => Buffer.from(s, "hex");
const KEY_128 = "2B7E151628AED2A6ABF7158809CF4F3C";
const KEY_192 = `${KEY_128}EF4359D8D580AA4F`;
const KEY_256 = `${KEY_192}7F036D6F04FC6A94`;
const TWEAK_10 = "39383736353433323130";
const TWEAK_11 = "3737373770717273373737";
const DECIMAL = "0123456789";
const BASE36 = "0123456789abcdefghi";

/** NIST SP 800-38G, FF1 samples 1-9 (FF1samples.pdf): [sample, key, tweak, radix, plaintext, ciphertext]. */
const NIST: [number, string, string, number, string, string][] = [
  [1, KEY_128, "", 10, DECIMAL, "2433477484"],
  [2, KEY_128, TWEAK_10, 10, DECIMAL, "6124200773"],
  [3, KEY_128, TWEAK_11, 36, BASE36, "a9tv40mll9kdu509eum"],
  [4, KEY_192, "", 10, DECIMAL, "2830668132"],
  [5, KEY_192, TWEAK_10, 10, DECIMAL, "2496655549"],
  [6, KEY_192, TWEAK_11, 36, BASE36, "xbj3kv35jrawxv32ysr"],
  [7, KEY_256, "", 10, DECIMAL, "6657667009"],
  [8, KEY_256, TWEAK_10, 10, DECIMAL, "1001623463"],
  [9, KEY_256, TWEAK_11, 36, BASE36, "xs8a0azh2avyalyzuwd"],
];

/**
 * Paths no NIST sample reaches, from @noble/ciphers 2.4.0's FF1 (an independent implementation):
 * Q longer than one block and S longer than one block (b > 15, d > 16), a tweak filling Q's first
 * block, and the shortest decimal string Rev. 1 allows.
 */
const CROSS_CHECKED: [string, string, string, number, string, string][] = [
  [
    "radix 10, 100 digits (b = 21, d = 28)",
    KEY_128,
    TWEAK_10,
    10,
    DECIMAL.repeat(10),
    "1528452526795276437399631178974365628258073680885759235363953833574332274766941179535272339788816045",
  ],
  [
    "radix 36, 60 numerals, 21-byte tweak (b = 20, d = 24)",
    KEY_256,
    "000102030405060708090a0b0c0d0e0f1011121314",
    36,
    "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmn",
    "geqyg8di6j997nvr42cnwvherlwttjh2ji4i9ogde5vyer8dznie9mc41h38",
  ],
  ["radix 10, 6 digits (the 10^6 minimum)", KEY_192, TWEAK_11, 10, "000000", "059077"],
];

describe("NIST SP 800-38G FF1 samples", () => {
  test.each(NIST)("sample %i", (_, key, tweak, radix, plaintext, ciphertext) => {
    const ff1 = new FF1(hex(key), { radix, tweak: hex(tweak) });
    expect(ff1.encrypt(plaintext)).toBe(ciphertext);
    expect(ff1.decrypt(ciphertext)).toBe(plaintext);
  });

  test.each(CROSS_CHECKED)("%s", (_, key, tweak, radix, plaintext, ciphertext) => {
    const ff1 = new FF1(hex(key), { radix, tweak: hex(tweak) });
    expect(ff1.encrypt(plaintext)).toBe(ciphertext);
    expect(ff1.decrypt(ciphertext)).toBe(plaintext);
  });
});

describe("FF1", () => {
  test("encryptAll and decryptAll agree with one-at-a-time encrypt and decrypt", () => {
    const ff1 = new FF1(hex(KEY_128), { tweak: hex(TWEAK_10) });
    const values = Array.from({ length: 5000 }, (_, i) => BigInt(i) * 1_999_993n);
    const encrypted = ff1.encryptAll(11, values);
    for (let i = 0; i < values.length; i += 97) {
      expect(encrypted[i]?.toString().padStart(11, "0")).toBe(ff1.encrypt((values[i] as bigint).toString().padStart(11, "0")));
    }
    expect(ff1.decryptAll(11, encrypted)).toEqual(values);
  });

  test("decrypt inverts encrypt for random keys, tweaks, radixes and lengths", () => {
    const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz";
    for (let trial = 0; trial < 200; trial++) {
      const radix = [2, 7, 10, 16, 36][trial % 5] as number;
      const ff1 = new FF1(randomBytes([16, 24, 32][trial % 3] as number), { radix, tweak: randomBytes(randomInt(0, 40)) });
      const length = ff1.minLength + randomInt(0, trial % 10 === 0 ? 120 : 12);
      const x = Array.from({ length }, () => alphabet.charAt(randomInt(radix))).join("");
      const y = ff1.encrypt(x);
      expect(y).toHaveLength(length);
      expect(ff1.decrypt(y)).toBe(x);
    }
  });

  test("the tweak and the key change the permutation", () => {
    const plain = new FF1(hex(KEY_128));
    expect(new FF1(hex(KEY_128), { tweak: Buffer.from("a") }).encrypt("0000000000")).not.toBe(plain.encrypt("0000000000"));
    expect(new FF1(hex(KEY_192)).encrypt("0000000000")).not.toBe(plain.encrypt("0000000000"));
  });

  test("the domain is at least 10^6 (SP 800-38G Rev. 1)", () => {
    expect(new FF1(hex(KEY_128)).minLength).toBe(6);
    expect(new FF1(hex(KEY_128), { radix: 2 }).minLength).toBe(20);
    expect(new FF1(hex(KEY_128), { radix: 36 }).minLength).toBe(4);
    expect(() => new FF1(hex(KEY_128)).encrypt("12345")).toThrow(/6 or more numerals/);
    expect(() => new FF1(hex(KEY_128)).encryptAll(5, [1n])).toThrow(RangeError);
  });

  test("bad keys, radixes and numerals are refused", () => {
    expect(() => new FF1(Buffer.alloc(20))).toThrow(/16, 24 or 32 bytes \(got 20/);
    expect(() => new FF1(hex(KEY_128), { radix: 37 })).toThrow(/radix/);
    expect(() => new FF1(hex(KEY_128), { radix: 1 })).toThrow(/radix/);
    const ff1 = new FF1(hex(KEY_128));
    for (const bad of ["12345a", "1234 56", "-123456", "１２３４５６"]) expect(() => ff1.encrypt(bad)).toThrow(/numeral string/);
    expect(() => new FF1(hex(KEY_128), { radix: 36 }).encrypt("ABCDEF")).toThrow(/lower case/);
    expect(() => ff1.encryptAll(6, [1_000_000n])).toThrow(/outside/);
    expect(() => ff1.decryptAll(6, [-1n])).toThrow(/outside/);
  });
});
