/**
 * Check-digit algorithms for formatted serial numbers: a person who types a number wrongly is told so.
 *
 * Every algorithm reads a payload of decimal digits (any length, computed exactly) and appends
 * `width` check characters. The `catchesAll…` claims are verified by brute force in the unit tests
 * (every single-character substitution and every adjacent transposition of many payloads):
 * - luhn: Luhn mod 10 (ISO/IEC 7812, payment cards); misses the transposition 09 <-> 90.
 * - verhoeff: Verhoeff's dihedral-group code (1969).
 * - damm: Damm's totally anti-symmetric quasigroup (2004).
 * - mod11-2: ISO/IEC 7064 MOD 11-2 (ORCID, Chinese resident identity numbers); check 0-9 or X.
 * - mod97-10: ISO/IEC 7064 MOD 97-10 (IBAN, LEI); two check digits 02-98, as IBANs and python-stdnum
 *   print them (98 - payload × 100 mod 97). A value is valid when the whole number mod 97 is 1, as the
 *   standard checks it: that also accepts the pairs 00 and 01 that idd printed before for about 2% of
 *   payloads (where the standard prints 97 and 98), and 99 for a payload whose standard check is 02.
 * - jd31: `n * 9 % 31 % 10` over the payload read as one number (the check digit of JD.com's serial-number generator);
 *   n mod 31 is taken digit by digit, so any length is exact. It misses some single-digit errors.
 */
import { IddError } from "../core/errors.js";

export const CHECK_ALGORITHMS = ["luhn", "verhoeff", "damm", "mod11-2", "mod97-10", "jd31"] as const;
export type CheckAlgorithmName = (typeof CHECK_ALGORITHMS)[number];

export interface CheckAlgorithm {
  readonly name: CheckAlgorithmName;
  /** Check characters appended: 1, or 2 for mod97-10. */
  readonly width: number;
  /** The check characters for a payload of decimal digits (throws TypeError on anything else). */
  compute(digits: string): string;
  /**
   * Whether `valueDigits` (payload digits, then the check characters) is consistent; false for malformed
   * input. The check is what `compute` prints, except for mod97-10, which accepts what the standard does.
   */
  validate(valueDigits: string): boolean;
  /** Every single-character substitution is detected. */
  readonly catchesAllSingleErrors: boolean;
  /** Every adjacent transposition ab -> ba (a ≠ b) is detected. */
  readonly catchesAllAdjacentTranspositions: boolean;
  /** One line for --help and docs. */
  readonly summary: string;
}

function digitAt(s: string, i: number): number {
  const d = s.charCodeAt(i) - 48;
  if (d >= 0 && d <= 9) return d;
  throw new TypeError(`check digits are computed over decimal digits only (got "${s.slice(0, 40)}")`);
}

/** A 10×10 table written as ten rows of ten digits; cell (r, c) is at r * 10 + c. */
const table = (rows: string[]): ((r: number, c: number) => number) => {
  const cells = rows.join("");
  return (r, c) => cells.charCodeAt(r * 10 + c) - 48;
};

function luhn(digits: string): string {
  let sum = 0;
  for (let i = digits.length - 1, double = true; i >= 0; i--, double = !double) {
    const d = digitAt(digits, i);
    sum += double ? (d < 5 ? d * 2 : d * 2 - 9) : d;
  }
  return String((10 - (sum % 10)) % 10);
}

/** Multiplication in the dihedral group D5 (Verhoeff 1969). */
const D5 = table([
  "0123456789",
  "1234067895",
  "2340178956",
  "3401289567",
  "4012395678",
  "5987604321",
  "6598710432",
  "7659821043",
  "8765932104",
  "9876543210",
]);
/** Position permutations: row k is the base permutation (row 1) applied k times; positions use row i mod 8. */
const VERHOEFF_P = table(["0123456789", "1576283094", "5803796142", "8916043527", "9453126870", "4286573901", "2793806415", "7046913258"]);
/** Inverses in D5: digit j is the inverse of the digit at position j. */
const VERHOEFF_INV = "0432156789";

function verhoeff(digits: string): string {
  let c = 0;
  // The check digit will sit at position 0 (from the right), so the payload's last digit is at position 1.
  for (let i = digits.length - 1, pos = 1; i >= 0; i--, pos++) c = D5(c, VERHOEFF_P(pos % 8, digitAt(digits, i)));
  return VERHOEFF_INV.charAt(c);
}

/** Damm's weakly totally anti-symmetric quasigroup of order 10 (Damm 2004), with a zero diagonal. */
const DAMM = table([
  "0317598642",
  "7092154863",
  "4206871359",
  "1750983426",
  "6123045978",
  "3674209581",
  "5869720134",
  "8945362017",
  "9438617205",
  "2581436790",
]);

function damm(digits: string): string {
  let interim = 0;
  for (let i = 0; i < digits.length; i++) interim = DAMM(interim, digitAt(digits, i));
  return String(interim);
}

/** ISO/IEC 7064 pure system MOD 11-2, by the standard's recursive method. */
function mod11_2(digits: string): string {
  let p = 0;
  for (let i = 0; i < digits.length; i++) p = ((p + digitAt(digits, i)) * 2) % 11;
  const c = (12 - p) % 11;
  return c === 10 ? "X" : String(c);
}

/** The number the digits spell, mod 97, exactly (digit by digit). */
function mod97(digits: string): number {
  let r = 0;
  for (let i = 0; i < digits.length; i++) r = (r * 10 + digitAt(digits, i)) % 97;
  return r;
}

/** ISO/IEC 7064 pure system MOD 97-10: 98 - (payload × 100 mod 97), two digits 02-98. */
function mod97_10(digits: string): string {
  const c = 98 - ((mod97(digits) * 100) % 97);
  return c < 10 ? `0${c}` : String(c);
}

/** MOD 97-10 as the standard validates: the whole value (payload, then the pair) mod 97 is 1. */
const mod97_10Valid = (payload: string, check: string) => /^[0-9]{2}$/.test(check) && mod97(payload + check) === 1;

function jd31(digits: string): string {
  let r = 0;
  for (let i = 0; i < digits.length; i++) r = (r * 10 + digitAt(digits, i)) % 31;
  return String(((r * 9) % 31) % 10);
}

const PAYLOAD = /^[0-9]*$/;

function algorithm(
  name: CheckAlgorithmName,
  compute: (digits: string) => string,
  claims: { width?: number; singles: boolean; transpositions: boolean; valid?: (payload: string, check: string) => boolean },
  summary: string,
): CheckAlgorithm {
  const width = claims.width ?? 1;
  const valid = claims.valid ?? ((payload: string, check: string) => compute(payload) === check);
  return {
    name,
    width,
    compute,
    validate(valueDigits: string): boolean {
      if (valueDigits.length <= width) return false;
      const payload = valueDigits.slice(0, -width);
      return PAYLOAD.test(payload) && valid(payload, valueDigits.slice(-width));
    },
    catchesAllSingleErrors: claims.singles,
    catchesAllAdjacentTranspositions: claims.transpositions,
    summary,
  };
}

const ALGORITHMS: { readonly [N in CheckAlgorithmName]: CheckAlgorithm } = {
  luhn: algorithm("luhn", luhn, { singles: true, transpositions: false }, "Luhn mod 10 (ISO/IEC 7812, payment cards); misses 09 <-> 90"),
  verhoeff: algorithm("verhoeff", verhoeff, { singles: true, transpositions: true }, "Verhoeff, dihedral group D5 (1969)"),
  damm: algorithm("damm", damm, { singles: true, transpositions: true }, "Damm, anti-symmetric quasigroup of order 10 (2004)"),
  "mod11-2": algorithm(
    "mod11-2",
    mod11_2,
    { singles: true, transpositions: true },
    "ISO/IEC 7064 MOD 11-2 (ORCID, Chinese resident ID); check 0-9 or X",
  ),
  "mod97-10": algorithm(
    "mod97-10",
    mod97_10,
    { width: 2, singles: true, transpositions: true, valid: mod97_10Valid },
    "ISO/IEC 7064 MOD 97-10 (IBAN, LEI); two check digits",
  ),
  jd31: algorithm("jd31", jd31, { singles: false, transpositions: false }, "JD.com's n * 9 % 31 % 10 over the payload as one number"),
};

export function isCheckAlgorithmName(name: string): name is CheckAlgorithmName {
  return (CHECK_ALGORITHMS as readonly string[]).includes(name);
}

/** The algorithm of that name; UNKNOWN_CHECK_ALGORITHM (listing the valid names) otherwise. */
export function checkAlgorithm(name: string): CheckAlgorithm {
  if (isCheckAlgorithmName(name)) return ALGORITHMS[name];
  throw new IddError(
    "UNKNOWN_CHECK_ALGORITHM",
    `unknown check-digit algorithm "${name.slice(0, 40)}": use one of ${CHECK_ALGORITHMS.join(", ")}`,
  );
}

/**
 * A value as a person typed it, reduced to what `validate` reads: its decimal digits (spaces, dashes,
 * letters and other separators ignored), plus a trailing X (either case) for mod11-2.
 */
export function typedValueDigits(algorithm: CheckAlgorithm, typed: string): string {
  const trimmed = typed.trim();
  const x = algorithm.name === "mod11-2" && /[xX]$/.test(trimmed);
  const digits = (x ? trimmed.slice(0, -1) : trimmed).replace(/[^0-9]/g, "");
  return x ? `${digits}X` : digits;
}
