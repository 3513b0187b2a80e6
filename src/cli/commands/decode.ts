/** `idd decode`: what issued values are made of (time, worker and sequence; serial, fields and dates). */
import type { Command } from "commander";
import { IddError } from "../../core/errors.js";
import { decodedText, decodeValue } from "../../sequences/decode.js";
import { keySourceFromEnv, loadObfuscationKeys, type ObfuscationKeys } from "../../sequences/obfuscation/keys.js";
import { decompose } from "../../sequences/snowflake-layout.js";
import { withStore } from "../load-config.js";

export function addDecodeCommand(program: Command): void {
  program
    .command("decode")
    .argument("<sequence>", "the sequence that issued the values")
    .argument("<value...>", "values it issued, as printed")
    .description(
      "what an id is made of, for support staff: a snowflake id's time, worker id and sequence; any other value's serial (issue position, in its period for sequences that restart), and a formatted value's fields and dates; an obfuscated serial (kind obfuscated, or {obf:N} in a format) also its key version (needs IDD_OBFUSCATION_KEYS or IDD_OBFUSCATION_KEYS_FILE). Any well-formed value decodes: decoding proves nothing about issuance",
    )
    .action(async (sequence: string, values: string[]) => {
      const def = await withStore((s) => s.getSequence(sequence));
      if (!def) throw new IddError("UNKNOWN_SEQUENCE", `no sequence named "${sequence}"`);
      if (def.snowflake) {
        for (const v of values) {
          const { time, worker, seq } = decompose(def.snowflake, v.trim());
          process.stdout.write(`${v}\ttime=${time.toISOString()} worker=${worker} seq=${seq}\n`);
        }
        return;
      }
      let keys: ObfuscationKeys | undefined;
      if (def.obfuscation) {
        const source = keySourceFromEnv(process.env);
        if (!source) throw new IddError("OBFUSCATION_KEY_MISSING", "set IDD_OBFUSCATION_KEYS or IDD_OBFUSCATION_KEYS_FILE to decode");
        keys = loadObfuscationKeys(source, process.env);
      }
      for (const v of values) process.stdout.write(`${v}\t${decodedText(decodeValue(def, v.trim(), keys))}\n`);
    });
}
