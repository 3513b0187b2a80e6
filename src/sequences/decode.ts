/**
 * What a value a sequence issued is made of, for support staff (`idd decode`): the serial it encodes
 * (its position in the sequence's counter, or in its period's), for an obfuscated one the key version,
 * and for a formatted one the fields and dates it prints. A monotonic or daily sequence's value is its
 * serial; a formatted one is read back by its template (format.ts readValue); an obfuscated serial,
 * alone or as `{obf:N}` in a template, is decrypted under the tweak the issuing worker used
 * (kinds/formatted.ts tweakContext). Snowflake ids are decomposed elsewhere (sequences/snowflake-layout.ts).
 * Decoding authenticates nothing: every well-formed value decodes.
 */

import type { DateUnit } from "../core/date-parts.js";
import { IddError } from "../core/errors.js";
import { readValue } from "./format.js";
import { formatOf, tweakContext } from "./kinds/formatted.js";
import type { ObfuscationKeys } from "./obfuscation/keys.js";
import type { ObfuscationSettings, SequenceDef } from "./sequence-def.js";

export interface DecodedValue {
  serial: bigint;
  /** Obfuscated values: the key version they were encoded with. */
  keyVersion?: number;
  /** Formatted values: the fields and the date parts the value prints. */
  fields: Record<string, string>;
  date: Partial<Record<DateUnit, string>>;
}

const SERIAL = /^(0|[1-9][0-9]{0,15})$/;

/**
 * The serial (and key version, fields, dates) of a value of a counter sequence. Keys are needed for
 * obfuscated values (OBFUSCATION_KEY_MISSING without); OBFUSCATED_VALUE_INVALID when the sequence never
 * prints the value's shape; SEQUENCE_INVALID for a snowflake sequence.
 */
export function decodeValue(def: SequenceDef, value: string, keys?: ObfuscationKeys): DecodedValue {
  if (def.kind === "snowflake")
    throw new IddError("SEQUENCE_INVALID", `sequence "${def.name}" issues snowflake ids: decompose them instead`);
  const notOurs = () =>
    new IddError(
      "OBFUSCATED_VALUE_INVALID",
      `"${value.slice(0, 60)}" is not a value of sequence "${def.name}"${def.kind === "formatted" ? ` (${def.format})` : ""}`,
    );
  const domain = (o: ObfuscationSettings, context: string | undefined) => {
    if (!keys) throw new IddError("OBFUSCATION_KEY_MISSING", "set IDD_OBFUSCATION_KEYS or IDD_OBFUSCATION_KEYS_FILE to decode");
    return keys.domain({ sequence: def.name, digits: o.digits, currentVersion: keys.versions[0] as number, context });
  };
  if (def.kind === "obfuscated") {
    const { serial, version } = domain(def.obfuscation, undefined).decode(value);
    return { serial, keyVersion: version, fields: {}, date: {} };
  }
  if (def.kind !== "formatted") {
    if (!SERIAL.test(value)) throw notOurs();
    return { serial: BigInt(value), fields: {}, date: {} };
  }
  const format = formatOf(def);
  const reading = readValue(format, value);
  if (!reading) throw notOurs();
  const { fields, date } = reading;
  const o = def.obfuscation;
  if (!o) return { serial: reading.serial, fields, date };
  const { serial, version } = domain(o, tweakContext(format, date)).decode(reading.serial.toString().padStart(o.digits, "0"));
  return { serial, keyVersion: version, fields, date };
}

/** decodeValue as `idd decode` prints it: `serial=… [key-version=…] [field=…] [unit=…]`. */
export function decodedText(d: DecodedValue): string {
  const version = d.keyVersion === undefined ? "" : ` key-version=${d.keyVersion}`;
  const printed = [...Object.entries(d.fields), ...Object.entries(d.date)].map(([k, v]) => ` ${k}=${v}`).join("");
  return `serial=${d.serial}${version}${printed}`;
}

/** The text `idd decode` prints for an obfuscated value, alone or in a format printing `{obf:N}`. */
export function decodeObfuscated(def: SequenceDef, keys: ObfuscationKeys, value: string): string {
  if (!def.obfuscation) throw new IddError("SEQUENCE_INVALID", `sequence "${def.name}" prints no obfuscated values`);
  return decodedText(decodeValue(def, value, keys));
}
