/**
 * FF1 format-preserving encryption (NIST SP 800-38G Rev. 1: FF1.Encrypt, FF1.Decrypt) over numeral strings
 * of radix 2-36 (digits 0-9 then a-z, lower case), with AES-128/192/256 from node:crypto as CIPH.
 *
 *   const ff1 = new FF1(key, { radix: 10, tweak });
 *   ff1.encrypt("0123456789")   // "2433477484" (NIST sample 1)
 *   ff1.decrypt("2433477484")   // "0123456789"
 *
 * FF1 is a keyed permutation of the strings of each length n: a ten-round Feistel network whose round
 * function is AES-CBC-MAC over P || Q (radix, n, tweak, round number, one half). Decrypt inverts it.
 *
 * - Domain: radix^n ≥ 10^6 (Rev. 1 raised the original 100 after attacks on small domains), so n ≥ 6
 *   for radix 10; n < 2^32 and the tweak shorter than 2^32 bytes, as the standard requires.
 * - The tweak is fixed per instance (public; different tweaks give unrelated permutations under one key).
 * - The key goes to OpenSSL once (one AES-ECB context, used block by block as CIPH) and is not kept.
 * - Numerals are bigints: each half as its value NUM_radix, added mod radix^m; strings only at the edges.
 *   encryptAll/decryptAll take and return the values NUM_radix(X) directly.
 * - Speed: a call into OpenSSL costs far more than the AES it does, so the MAC state after P and Q's
 *   constant leading blocks is cached per length, and encryptAll runs a round for a whole batch of values
 *   in one AES call. One value costs ten AES calls; a batch, ten per 4096 values.
 */
import { type Cipher, createCipheriv } from "node:crypto";

/** Rev. 1: radix^minlen ≥ 1,000,000. */
export const FF1_MIN_DOMAIN = 1_000_000n;
export const FF1_AES_KEY_BYTES: readonly number[] = [16, 24, 32];
const ROUNDS = 10;
const BLOCK = 16;
const MAX_LENGTH = 2 ** 32 - 1;
/** Values whose rounds share AES calls: bounds the buffers of one call. */
const BATCH = 4096;
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

export interface FF1Options {
  /** 2-36; default 10. */
  readonly radix?: number;
  /** Default empty. */
  readonly tweak?: Uint8Array;
}

/** Everything FF1 derives from a numeral string's length alone: u, v, b, d, P (steps 1-5) and the constant part of Q. */
interface Shape {
  readonly u: number;
  readonly v: number;
  /** Bytes of NUM_radix(B) in Q. */
  readonly b: number;
  /** Bytes of S read as y. */
  readonly d: number;
  readonly radixU: bigint;
  readonly radixV: bigint;
  /** radix^n: values are below it. */
  readonly size: bigint;
  /** CBC-MAC state after P and Q's leading blocks that hold only tweak and zero padding. */
  readonly prefix: Buffer;
  /** Q's remaining blocks, constant bytes filled in: [i]1 at length - b - 1, [NUM(B)]b at the end (zero here). */
  readonly tail: Buffer;
  /** prefix ⊕ tail's first block: the CBC-MAC input of a one-block tail before [i] and NUM(B) are added. */
  readonly first: Buffer;
}

/** Bytes of the largest value below `limit` (limit ≥ 2): ⌈⌈log2 limit⌉ / 8⌉ for the `b` of step 3. */
function byteLength(limit: bigint): number {
  return Math.ceil((limit - 1n).toString(2).length / 8);
}

/** Writes `value` (< 256^len) big-endian into buf[offset, offset + len). */
function writeBE(buf: Buffer, offset: number, len: number, value: bigint): void {
  if (len <= 6) {
    if (len > 0) buf.writeUIntBE(Number(value), offset, len);
    return;
  }
  let end = offset + len;
  while (end - offset >= 4) {
    end -= 4;
    buf.writeUInt32BE(Number(value & 0xffffffffn), end);
    value >>= 32n;
  }
  if (end > offset) buf.writeUIntBE(Number(value), offset, end - offset);
}

/** XORs `value` (< 256^len) big-endian into buf[offset, offset + len). */
function xorBE(buf: Buffer, offset: number, len: number, value: bigint): void {
  if (len <= 6) {
    let n = Number(value);
    for (let k = offset + len - 1; k >= offset; k--) {
      buf[k] = (buf[k] as number) ^ (n % 256);
      n = Math.floor(n / 256);
    }
    return;
  }
  const bytes = Buffer.alloc(len);
  writeBE(bytes, 0, len, value);
  for (let k = 0; k < len; k++) buf[offset + k] = (buf[offset + k] as number) ^ (bytes[k] as number);
}

/** NUM(buf[offset, offset + d)) for d a multiple of 4. */
function readBE(buf: Buffer, offset: number, d: number): bigint {
  if (d === 8) return buf.readBigUInt64BE(offset);
  let y = 0n;
  for (let k = 0; k < d; k += 4) y = (y << 32n) | BigInt(buf.readUInt32BE(offset + k));
  return y;
}

export class FF1 {
  readonly radix: number;
  /** The shortest numeral string FF1 accepts: radix^minLength ≥ 10^6. */
  readonly minLength: number;
  readonly #tweak: Buffer;
  readonly #aes: Cipher;
  readonly #bigRadix: bigint;
  readonly #numeral: RegExp;
  /** Characters parseInt can read at once exactly (radix^chunk < 2^53). */
  readonly #chunk: number;
  readonly #shapes = new Map<number, Shape>();

  constructor(key: Uint8Array, options: FF1Options = {}) {
    const radix = options.radix ?? 10;
    if (!Number.isInteger(radix) || radix < 2 || radix > 36) throw new RangeError(`FF1 radix must be an integer 2-36 (got ${radix})`);
    if (!FF1_AES_KEY_BYTES.includes(key.length))
      throw new RangeError(`FF1 needs an AES key of 16, 24 or 32 bytes (got ${key.length} bytes)`);
    const tweak = options.tweak ?? new Uint8Array(0);
    if (tweak.length > MAX_LENGTH) throw new RangeError("FF1 tweak is longer than 2^32 - 1 bytes");
    this.radix = radix;
    this.#bigRadix = BigInt(radix);
    this.#tweak = Buffer.from(tweak);
    let minLength = 1;
    while (this.#bigRadix ** BigInt(minLength) < FF1_MIN_DOMAIN) minLength++;
    this.minLength = Math.max(2, minLength);
    const last = ALPHABET.charAt(radix - 1);
    this.#numeral = new RegExp(`^[0-${radix <= 10 ? last : `9a-${last}`}]*$`);
    this.#chunk = Math.floor(53 / Math.log2(radix));
    this.#aes = createCipheriv(`aes-${key.length * 8}-ecb`, key, null).setAutoPadding(false);
  }

  /** FF1.Encrypt. Throws RangeError for a string that is not a numeral string of an allowed length. */
  encrypt(x: string): string {
    return this.#str(this.encryptAll(x.length, [this.#num(x)])[0] as bigint, x.length);
  }

  /** FF1.Decrypt: the inverse of encrypt. */
  decrypt(x: string): string {
    return this.#str(this.decryptAll(x.length, [this.#num(x)])[0] as bigint, x.length);
  }

  /**
   * FF1.Encrypt of many numeral strings of one length, each given as its value NUM_radix(X) in
   * [0, radix^length) and returned the same way: the rounds of all of them share AES calls, which is
   * where a single encryption spends most of its time.
   */
  encryptAll(length: number, values: readonly bigint[]): bigint[] {
    return this.#run(length, values, false);
  }

  /** FF1.Decrypt of many numeral strings of one length, as encryptAll. */
  decryptAll(length: number, values: readonly bigint[]): bigint[] {
    return this.#run(length, values, true);
  }

  #run(length: number, values: readonly bigint[], decrypt: boolean): bigint[] {
    const s = this.#shape(length);
    const out: bigint[] = [];
    for (let from = 0; from < values.length; from += BATCH) {
      const batch = values.slice(from, from + BATCH);
      // X = A || B, so NUM(X) = NUM(A) * radix^v + NUM(B).
      const a: bigint[] = [];
      const b: bigint[] = [];
      for (const x of batch) {
        if (typeof x !== "bigint" || x < 0n || x >= s.size) throw new RangeError(`FF1: a value is outside [0, ${this.radix}^${length})`);
        a.push(x / s.radixV);
        b.push(x % s.radixV);
      }
      if (decrypt) {
        // FF1.Decrypt: rounds in reverse, A and B swapped, subtraction for addition.
        for (let i = ROUNDS - 1; i >= 0; i--) {
          const modulus = i % 2 === 0 ? s.radixU : s.radixV;
          const y = this.#round(s, i, a);
          for (let j = 0; j < a.length; j++) {
            let c = (b[j] as bigint) - ((y[j] as bigint) % modulus);
            if (c < 0n) c += modulus;
            b[j] = a[j] as bigint;
            a[j] = c;
          }
        }
      } else {
        for (let i = 0; i < ROUNDS; i++) {
          const modulus = i % 2 === 0 ? s.radixU : s.radixV;
          const y = this.#round(s, i, b);
          for (let j = 0; j < a.length; j++) {
            let c = (a[j] as bigint) + ((y[j] as bigint) % modulus);
            if (c >= modulus) c -= modulus;
            a[j] = b[j] as bigint;
            b[j] = c;
          }
        }
      }
      for (let j = 0; j < a.length; j++) out.push((a[j] as bigint) * s.radixV + (b[j] as bigint));
    }
    return out;
  }

  /**
   * Steps 6i-6iv for round i of every value of a batch: y = NUM(S), S derived from R = PRF(P || Q) where
   * Q ends in [i]1 || [NUM(half)]b. The CBC-MAC of P and Q's constant blocks is s.prefix; each
   * remaining block is one AES call for the whole batch (ECB over the batch's chaining states).
   */
  #round(s: Shape, i: number, halves: readonly bigint[]): bigint[] {
    const { tail, b, d } = s;
    const count = halves.length;
    let r = Buffer.allocUnsafe(count * BLOCK);
    if (tail.length === BLOCK) {
      // The usual case (b ≤ 15): one block, whose constant bytes are already in s.first.
      r.fill(s.first);
      for (let j = 0; j < count; j++) {
        const at = j * BLOCK;
        r[at + BLOCK - b - 1] = (r[at + BLOCK - b - 1] as number) ^ i;
        xorBE(r, at + BLOCK - b, b, halves[j] as bigint);
      }
      r = this.#aes.update(r);
    } else {
      const q = Buffer.allocUnsafe(count * tail.length);
      for (let j = 0; j < count; j++) {
        const at = j * tail.length;
        tail.copy(q, at);
        q[at + tail.length - b - 1] = i;
        writeBE(q, at + tail.length - b, b, halves[j] as bigint);
      }
      for (let j = 0; j < count; j++) s.prefix.copy(r, j * BLOCK);
      for (let k = 0; k < tail.length; k += BLOCK) {
        for (let j = 0; j < count; j++) {
          const at = j * BLOCK;
          const from = j * tail.length + k;
          for (let t = 0; t < BLOCK; t++) r[at + t] = (r[at + t] as number) ^ (q[from + t] as number);
        }
        r = this.#aes.update(r);
      }
    }
    const y: bigint[] = new Array(count);
    if (d === 8 && LITTLE_ENDIAN) {
      // The usual case (b ≤ 4): y is R's first eight bytes, big-endian; swapped, they read as one native word.
      r.swap64();
      const aligned = r.byteOffset % 8 === 0 ? r : new Uint8Array(r);
      const words = new BigUint64Array(aligned.buffer, aligned.byteOffset, count * 2);
      for (let j = 0; j < count; j++) y[j] = words[2 * j] as bigint;
      return y;
    }
    if (d <= BLOCK) {
      for (let j = 0; j < count; j++) y[j] = readBE(r, j * BLOCK, d);
      return y;
    }
    // S = R || CIPH(R ⊕ [1]16) || CIPH(R ⊕ [2]16) || …, its first d bytes.
    const extra = Math.ceil(d / BLOCK) - 1;
    const more = Buffer.allocUnsafe(count * extra * BLOCK);
    for (let j = 0; j < count; j++) {
      for (let e = 1; e <= extra; e++) {
        const at = (j * extra + e - 1) * BLOCK;
        r.copy(more, at, j * BLOCK, (j + 1) * BLOCK);
        more.writeUInt32BE((more.readUInt32BE(at + 12) ^ e) >>> 0, at + 12);
      }
    }
    const tails = this.#aes.update(more);
    const sj = Buffer.allocUnsafe((extra + 1) * BLOCK);
    for (let j = 0; j < count; j++) {
      r.copy(sj, 0, j * BLOCK, (j + 1) * BLOCK);
      tails.copy(sj, BLOCK, j * extra * BLOCK, (j + 1) * extra * BLOCK);
      y[j] = readBE(sj, 0, d);
    }
    return y;
  }

  #shape(n: number): Shape {
    if (!Number.isInteger(n) || n < this.minLength || n > MAX_LENGTH)
      throw new RangeError(`FF1: radix ${this.radix} needs ${this.minLength} or more numerals (domain ≥ 10^6), got ${n}`);
    const known = this.#shapes.get(n);
    if (known) return known;
    const u = Math.floor(n / 2);
    const v = n - u;
    const radixU = this.#bigRadix ** BigInt(u);
    const radixV = this.#bigRadix ** BigInt(v);
    const b = byteLength(radixV);
    const d = 4 * Math.ceil(b / 4) + 4;
    const t = this.#tweak.length;
    // P = [1]1 || [2]1 || [1]1 || [radix]3 || [10]1 || [u mod 256]1 || [n]4 || [t]4
    const p = Buffer.alloc(BLOCK);
    p.set([1, 2, 1]);
    p.writeUIntBE(this.radix, 3, 3);
    p[6] = ROUNDS;
    p[7] = u % 256;
    p.writeUInt32BE(n, 8);
    p.writeUInt32BE(t, 12);
    // Q = T || [0]^((-t-b-1) mod 16) || [i]1 || [NUM(B)]b
    const q = Buffer.alloc(t + ((((-t - b - 1) % BLOCK) + BLOCK) % BLOCK) + 1 + b);
    this.#tweak.copy(q);
    const fixed = Math.floor((q.length - b - 1) / BLOCK) * BLOCK;
    let prefix = this.#aes.update(p);
    for (let k = 0; k < fixed; k += BLOCK) {
      const x = Buffer.alloc(BLOCK);
      for (let j = 0; j < BLOCK; j++) x[j] = (prefix[j] as number) ^ (q[k + j] as number);
      prefix = this.#aes.update(x);
    }
    const tail = q.subarray(fixed);
    const first = Buffer.alloc(BLOCK);
    for (let j = 0; j < BLOCK; j++) first[j] = (prefix[j] as number) ^ (tail[j] as number);
    const shape: Shape = { u, v, b, d, radixU, radixV, size: radixU * radixV, prefix, tail, first };
    this.#shapes.set(n, shape);
    return shape;
  }

  #num(s: string): bigint {
    if (!this.#numeral.test(s)) throw new RangeError(`FF1: not a numeral string of radix ${this.radix} (digits 0-9 then a-z, lower case)`);
    if (this.radix === 10) return BigInt(s);
    let value = 0n;
    for (let k = 0; k < s.length; k += this.#chunk) {
      const part = s.slice(k, k + this.#chunk);
      value = value * this.#bigRadix ** BigInt(part.length) + BigInt(Number.parseInt(part, this.radix));
    }
    return value;
  }

  #str(value: bigint, m: number): string {
    return value.toString(this.radix).padStart(m, "0");
  }
}
