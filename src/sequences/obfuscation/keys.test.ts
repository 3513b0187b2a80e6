import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { afterAll, describe, expect, test } from "vitest";
import { isIddError } from "../../core/errors.js";
import { keySourceFromEnv, loadObfuscationKeys, OBFUSCATION_KEYS_ENV, OBFUSCATION_KEYS_FILE_ENV, parseObfuscationKeys } from "./keys.js";

/** Keys anyone would recognise in a message: their text, base64 and hex. */
const SECRET_16 = Buffer.from("SECRET-KEY-16-B!");
const SECRET_32 = Buffer.from("SECRET-KEY-32-BYTES-LONG-XYZZY!!");
const SECRET_20 = Buffer.from("SECRET-KEY-20-BYTES!");
const b64 = (k: Buffer) => k.toString("base64");
const FORBIDDEN = [SECRET_16, SECRET_32, SECRET_20].flatMap((k) => [
  k.toString("utf8"),
  b64(k),
  b64(k).slice(0, 12),
  k.toString("base64url").slice(4, 16),
  k.toString("hex").slice(0, 16),
  "SECRET",
  "U0VDUkVU", // "SECRET" in base64
]);

function expectNoKeyMaterial(text: string): void {
  for (const f of FORBIDDEN) expect(text).not.toContain(f);
}

function messageOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(isIddError(e, "CONFIG_INVALID")).toBe(true);
    return (e as Error).message;
  }
  throw new Error("did not throw");
}

const dir = mkdtempSync(join(tmpdir(), "idd-keys-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("parseObfuscationKeys", () => {
  test("version:base64 entries, comma-separated; standard or URL-safe base64, padding optional", () => {
    const keys = parseObfuscationKeys(
      ` 1:${b64(SECRET_16)} , 2:${SECRET_32.toString("base64url")},0:${b64(Buffer.alloc(24, 7)).replace(/=+$/, "")}`,
      OBFUSCATION_KEYS_ENV,
    );
    expect(keys.versions).toEqual([0, 1, 2]);
    expect(keys.has(2)).toBe(true);
    expect(keys.has(3)).toBe(false);
  });

  test("every problem at once, by entry number, without key material", () => {
    const text = [
      `1:${b64(SECRET_16)}`,
      `2:${b64(SECRET_20)}`, // 20 bytes
      `12:${b64(SECRET_32)}`, // version not one digit
      `${b64(SECRET_32)}`, // no version
      "3:SECRET-KEY!!", // not base64
      `1:${b64(SECRET_32)}`, // version 1 twice
      `4:${b64(SECRET_16)}`, // the same key as version 1
      "5:",
      `x:${b64(SECRET_16)}`,
      `6:${b64(Buffer.alloc(16))}`,
      `7:${b64(SECRET_16).slice(0, -3)}B==`, // stray bits: does not round-trip
    ].join(",");
    const message = messageOf(() => parseObfuscationKeys(text, OBFUSCATION_KEYS_ENV));
    expect(message.split("\n")).toEqual([
      "obfuscation keys in IDD_OBFUSCATION_KEYS:",
      "entry 2 (version 2): the key is 20 bytes; AES keys are 16, 24 or 32 bytes",
      "entry 3: the version is not one digit 0-9",
      "entry 4: not version:base64key",
      "entry 5 (version 3): the key is not base64",
      "entry 6: version 1 is given twice (first at entry 1)",
      "entry 7 (version 4): the same key as version 1",
      "entry 8 (version 5): the key is empty",
      "entry 9: the version is not one digit 0-9",
      "entry 10 (version 6): the key is all zero bytes (a placeholder?)",
      "entry 11 (version 7): the key is not base64",
    ]);
    expectNoKeyMaterial(message);
  });

  test("files: one key a line, # comments and blank lines skipped, problems by line", () => {
    const keys = parseObfuscationKeys(`# idd keys\n\n1:${b64(SECRET_16)}\r\n2:${b64(SECRET_32)}\n`, "/run/keys", "line");
    expect(keys.versions).toEqual([1, 2]);
    const message = messageOf(() => parseObfuscationKeys(`# idd keys\n1:${b64(SECRET_16)}\n${b64(SECRET_20)}\n`, "/run/keys", "line"));
    expect(message).toBe("obfuscation keys in /run/keys:\nline 3: not version:base64key");
    expectNoKeyMaterial(message);
  });

  test("no keys at all is a problem", () => {
    expect(messageOf(() => parseObfuscationKeys(" , ,", OBFUSCATION_KEYS_ENV))).toMatch(/no keys/);
    expect(messageOf(() => parseObfuscationKeys("# nothing\n", "/k", "line"))).toMatch(/no keys/);
  });

  test("keys print and serialise as their versions only", () => {
    const keys = parseObfuscationKeys(`1:${b64(SECRET_16)},2:${b64(SECRET_32)}`, OBFUSCATION_KEYS_ENV);
    expect(inspect(keys)).toBe('ObfuscationKeys { origin: "IDD_OBFUSCATION_KEYS", versions: [1, 2] }');
    expect(JSON.stringify({ keys })).toBe('{"keys":{"origin":"IDD_OBFUSCATION_KEYS","versions":[1,2]}}');
    const domain = keys.domain({ sequence: "orders", digits: 12, currentVersion: 2 });
    for (const shown of [
      inspect(keys, { showHidden: true, depth: 10 }),
      inspect(domain, { showHidden: true, depth: 10 }),
      JSON.stringify(domain),
    ])
      expectNoKeyMaterial(shown);
  });
});

describe("loadObfuscationKeys and keySourceFromEnv", () => {
  test("from the variable the configuration names", () => {
    const env = { [OBFUSCATION_KEYS_ENV]: `1:${b64(SECRET_16)}` };
    const source = keySourceFromEnv(env);
    expect(source).toEqual({ env: OBFUSCATION_KEYS_ENV });
    expect(loadObfuscationKeys(source as { env: string }, env).versions).toEqual([1]);
    expect(messageOf(() => loadObfuscationKeys({ env: "IDD_OTHER_KEYS" }, env))).toBe("obfuscation keys: IDD_OTHER_KEYS is not set");
  });

  test("from a file", () => {
    const file = join(dir, "keys");
    writeFileSync(file, `3:${b64(SECRET_32)}\n4:${b64(SECRET_16)}\n`, { mode: 0o600 });
    const source = keySourceFromEnv({ [OBFUSCATION_KEYS_FILE_ENV]: file });
    expect(source).toEqual({ file });
    expect(loadObfuscationKeys(source as { file: string }).versions).toEqual([3, 4]);
    expect(messageOf(() => loadObfuscationKeys({ file: join(dir, "missing") }))).toMatch(/cannot read .*missing \(ENOENT\)/);
  });

  test("neither set: undefined; both set: CONFIG_INVALID", () => {
    expect(keySourceFromEnv({})).toBeUndefined();
    expect(messageOf(() => keySourceFromEnv({ [OBFUSCATION_KEYS_ENV]: "1:x", [OBFUSCATION_KEYS_FILE_ENV]: "/k" }))).toMatch(/not both/);
  });
});

describe("ObfuscationKeys.domain", () => {
  const keys = parseObfuscationKeys(`1:${b64(SECRET_16)},2:${b64(SECRET_32)}`, OBFUSCATION_KEYS_ENV);

  test("a sequence's domain encodes with its current version and decodes every version", () => {
    const old = keys.domain({ sequence: "orders", digits: 12, currentVersion: 1 });
    const now = keys.domain({ sequence: "orders", digits: 12, currentVersion: 2 });
    expect(now.encode(7n)).toMatch(/^2[0-9]{11}$/);
    expect(now.decode(old.encode(7n))).toEqual({ serial: 7n, version: 1 });
  });

  test("the sequence name is the tweak: two sequences with the same keys and width issue different values", () => {
    const a = keys.domain({ sequence: "orders", digits: 12, currentVersion: 1 });
    const b = keys.domain({ sequence: "invoices", digits: 12, currentVersion: 1 });
    expect(a.encode(1n)).not.toBe(b.encode(1n));
  });

  test("a current version without a key is CONFIG_INVALID, naming the versions there are", () => {
    const message = messageOf(() => keys.domain({ sequence: "orders", digits: 12, currentVersion: 3 }));
    expect(message).toBe(
      'sequence "orders" encodes with obfuscation key version 3, which IDD_OBFUSCATION_KEYS does not hold (it holds 1, 2)',
    );
  });
});
