/**
 * What an obfuscated value is made of, for support staff (`idd decode`): the serial it encodes (its
 * position in the sequence's counter, or in its period's) and the key version, and for a formatted
 * value printing `{obf:N}` the fields and dates it prints, which also give the FF1 tweak back
 * (kinds/formatted.ts). Decoding authenticates nothing: every well-formed value decodes.
 */
import { IddError } from "../errors.js";
import type { SequenceDef } from "./definition.js";
import { readValue } from "./format.js";
import { formatOf } from "./kinds/formatted.js";
import type { ObfuscationKeys } from "./obfuscation/keys.js";

export function decodeObfuscated(def: SequenceDef, keys: ObfuscationKeys, value: string): string {
  const o = def.obfuscation;
  if (!o) throw new IddError("SEQUENCE_INVALID", `sequence "${def.name}" prints no obfuscated values`);
  const domain = (context?: string) =>
    keys.domain({ sequence: def.name, digits: o.digits, currentVersion: keys.versions[0] as number, context });
  if (def.format === null) {
    const { serial, version } = domain().decode(value);
    return `serial=${serial} key-version=${version}`;
  }
  const format = formatOf(def);
  const reading = readValue(format, value);
  if (!reading)
    throw new IddError("OBFUSCATED_VALUE_INVALID", `"${value.slice(0, 60)}" is not a value of sequence "${def.name}" (${def.format})`);
  let context = "";
  for (const unit of format.dateUnits) context += reading.date[unit];
  const { serial, version } = domain(context).decode(reading.serial.toString().padStart(o.digits, "0"));
  const printed = [...Object.entries(reading.fields), ...Object.entries(reading.date)].map(([k, v]) => ` ${k}=${v}`).join("");
  return `serial=${serial} key-version=${version}${printed}`;
}
