/** `idd seq create|update|list|show`: define and inspect sequences in MongoDB. */
import { readFile } from "node:fs/promises";
import { type Command, InvalidArgumentError } from "commander";
import { IddError } from "../../core/errors.js";
import { PERIODS } from "../../core/period.js";
import { defineSequence, GRANT_LOG_MODES, type SequenceDef } from "../../sequences/definition.js";
import { KIND_NAMES, KINDS } from "../../sequences/kinds/table.js";
import { readSequenceFile } from "../../sequences/sequence-file.js";
import { runsOutAt } from "../../sequences/snowflake-layout.js";
import { type InForce, inForce } from "../../storage/reservation-in-force.js";
import { commandConfig, withStore } from "../load-config.js";
import { say } from "../output.js";
import { forecastLines } from "./seq-forecast.js";

/** A sequence on one line: name, tab, then its settings as key=value. */
function sequenceLine(d: SequenceDef): string {
  const zone = d.timeZone ? ` time-zone=${d.timeZone}` : "";
  const period = d.period !== "never" ? ` period=${d.period}` : "";
  const format = d.format !== null ? ` format=${JSON.stringify(d.format)} overflow=${d.overflow}` : "";
  const obf = d.obfuscation ? ` digits=${d.obfuscation.digits} key-version=${d.obfuscation.keyVersion}` : "";
  const l = d.snowflake;
  const snow = l
    ? ` layout=epoch=${new Date(l.epochMs).toISOString()},unitMs=${l.unitMs},timeBits=${l.timeBits},workerBits=${l.workerBits},seqBits=${l.seqBits} runs-out=${runsOutAt(l).toISOString()}`
    : "";
  const log = d.gapless ? ` gapless confirm-timeout=${d.gapless.confirmTimeoutMs}ms` : ` grant-log=${d.grantLog}`;
  return `${d.name}\tkind=${d.kind} start=${d.start} max-value=${d.maxValue}${zone}${period}${format}${obf}${snow}${log}${d.audit ? ` audit=on since=${d.auditSince?.toISOString()}` : ""} created=${d.createdAt.toISOString()}`;
}

const AUDIT_HELP =
  "record every answered number in MongoDB (once per batch, before the replies go out), so `idd audit` can explain each skipped number; implies --grant-log strict";

const GRANT_LOG_HELP = `${GRANT_LOG_MODES.join(" or ")}: strict appends each block to MongoDB before using it (replay restores to the last grant, gap ≈ 0; claims stop while MongoDB is down); relaxed appends in batches (replay restores to the reservation)`;

/** What `idd seq create/update` take, as commander hands them over. */
interface SeqOptions {
  maxValue?: string;
  timeZone?: string;
  format?: string;
  period?: string;
  overflow?: string;
  digits?: string;
  keyVersion?: string;
  layout?: string;
  grantLog?: string;
  audit?: boolean;
  gapless?: boolean;
  confirmTimeout?: string;
}

const GAPLESS_HELP =
  "monotonic, daily and formatted: numbers from MongoDB, one record each, never skipped; each must be confirmed or voided (with a reason) within --confirm-timeout, else it is voided as expired (docs/sequences.md: Gapless numbering). Fixed at creation";
const CONFIRM_TIMEOUT_HELP = "gapless: how long a number may stay pending, e.g. 600000, 90s, 10m, 1h (default 10m, 1s-31d)";

const FROM_HELP =
  'a file of definitions, one per line: JSON lines ({"name":"t-1","kind":"daily"}) or CSV with a header row (name,kind,start,…); fields as the options are named (maxValue or max-value); the options given here are every line\'s defaults. Every line is checked before any is created; names defined already are left as they are';

/** `idd seq create --from <file>`: checks every line, then creates them in chunks, with progress. */
async function createFromFile(file: string, defaults: SeqOptions & { kind: string; start: string }): Promise<void> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    throw new InvalidArgumentError(`cannot read ${file}: ${(e as Error).message}`);
  }
  const defs = readSequenceFile(text, defaults, new Date(), file);
  say(`${file}: ${defs.length} sequence definitions checked; creating them`);
  const started = performance.now();
  let lastSaid = started;
  const existing = await withStore((s) =>
    s.createSequences(defs, (done) => {
      const now = performance.now();
      if (now - lastSaid < 1000 && done < defs.length) return;
      lastSaid = now;
      say(`created ${done} of ${defs.length} (${Math.round(done / ((now - started) / 1000))}/s)`);
    }),
  );
  if (existing.length > 0)
    say(`${existing.length} defined already, left as they are: ${existing.slice(0, 10).join(", ")}${existing.length > 10 ? ", …" : ""}`);
  process.stdout.write(`created ${defs.length - existing.length} sequences; ${existing.length} defined already\n`);
}

export function addSeqCommand(program: Command): void {
  const seq = program.command("seq").description("define and inspect sequences");

  seq
    .command("create")
    .argument("[name]", "1-64 characters of A-Z a-z 0-9 . _ - (or --from a file of definitions)")
    .option("--kind <kind>", KIND_NAMES.map((k) => `${k}: ${KINDS[k].summary}`).join("; "), "monotonic")
    .option("--start <n>", "first number (of each day, for daily sequences)", "1")
    .option("--max-value <n>", "highest number ever issued (default 2^53 - 1)")
    .option("--time-zone <tz>", "IANA time zone of the days and dates of daily and formatted sequences (default UTC)")
    .option(
      "--format <template>",
      "formatted: literal text and {yyyy} {yy} {MM} {dd} {HH} {mm} {ss} {seq} {seq:N} {obf:N} {field:name} {field:name:N} {check:algorithm}, e.g. 'INV-{yy}{MM}-{seq:6}{check:damm}' (docs/sequences.md: Formatted serial numbers)",
    )
    .option("--period <period>", `formatted: when the serial restarts, ${PERIODS.join(", ")} (default: the finest date the format prints)`)
    .option(
      "--overflow <policy>",
      "formatted: a serial wider than {seq:N}: refuse (default; max-value stops there) or widen (printed whole)",
    )
    .option("--digits <n>", "obfuscated: width of the values, 7-18 (default 10)")
    .option(
      "--key-version <v>",
      "obfuscated, and formatted with {obf:N}: the key version (1-9) new values are encoded with (default 1); keys come from IDD_OBFUSCATION_KEYS",
    )
    .option(
      "--layout <layout>",
      "snowflake: epoch=<ISO date or Unix ms>,unitMs=1,timeBits=41,workerBits=10,seqBits=12 (defaults; epoch: the start of today, UTC); at most 63 bits",
    )
    .option("--grant-log <mode>", `${GRANT_LOG_HELP} (default: relaxed; strict with --audit)`)
    .option("--audit", AUDIT_HELP)
    .option("--gapless", GAPLESS_HELP)
    .option("--confirm-timeout <duration>", CONFIRM_TIMEOUT_HELP)
    .option("--from <file>", FROM_HELP)
    .description("define a sequence, or every sequence of a file (--from)")
    .action(async (name: string | undefined, o: SeqOptions & { kind: string; start: string; from?: string }) => {
      const { from, ...options } = o;
      if (from !== undefined) {
        if (name !== undefined) throw new InvalidArgumentError("give a name or --from <file>, not both");
        await createFromFile(from, options);
        return;
      }
      if (name === undefined) throw new InvalidArgumentError("give the sequence's name, or --from <file>");
      const def = defineSequence({ name, ...options }, new Date());
      await withStore((s) => s.createSequence(def));
      process.stdout.write(`${sequenceLine(def)}\n`);
    });

  seq
    .command("update")
    .argument("<name>")
    .option("--max-value <n>", "new highest number")
    .option("--time-zone <tz>", "new time zone (daily and formatted sequences)")
    .option("--overflow <policy>", "formatted: refuse or widen")
    .option(
      "--key-version <v>",
      "obfuscated, and formatted with {obf:N}: rotate to this key version (1-9); values of earlier versions stay valid and never collide",
    )
    .option("--grant-log <mode>", GRANT_LOG_HELP)
    .option("--audit", AUDIT_HELP)
    .option("--no-audit", "stop recording answered numbers (the grant log stays as it is)")
    .option("--gapless", "refused: gapless is fixed when a sequence is created (its Redis blocks left gaps already)")
    .option("--confirm-timeout <duration>", CONFIRM_TIMEOUT_HELP)
    .description(
      "change a sequence's max value, time zone, overflow, grant log mode, audit or confirm timeout (kind, start, format, period and gapless cannot change)",
    )
    .action(async (name: string, o: SeqOptions) => {
      await withStore(async (s) => {
        const existing = await s.getSequence(name);
        if (!existing) throw new IddError("UNKNOWN_SEQUENCE", `no sequence named "${name}"`);
        const def = defineSequence({ name, ...o }, new Date(), existing);
        await s.updateSequence(def);
        process.stdout.write(`${sequenceLine(def)}\n`);
      });
    });

  seq
    .command("list")
    .description("list every sequence")
    .action(async () => {
      const all = await withStore((s) => s.listSequences());
      for (const d of all) process.stdout.write(`${sequenceLine(d)}\n`);
      if (all.length === 0) say("no sequences defined yet: idd seq create <name>");
    });

  seq
    .command("show")
    .argument("<name>")
    .description(
      "show one sequence, its current reservation, and its capacity forecast: what is left before it runs out and when, at its recent rate",
    )
    .action(async (name: string) => {
      await withStore(async (s) => {
        const d = await s.getSequence(name);
        if (!d) throw new IddError("UNKNOWN_SEQUENCE", `no sequence named "${name}"`);
        process.stdout.write(`${sequenceLine(d)}\n`);
        // The reservation in force per period (what Redis may hand out up to).
        const reserved = new Map<string, InForce>();
        for await (const r of s.reservationRecords([name])) {
          const k = r.period ?? "-";
          reserved.set(k, inForce(reserved.get(k), r));
        }
        if (reserved.size === 0) say("no numbers reserved yet");
        for (const [period, r] of [...reserved].sort(([a], [b]) => (a < b ? -1 : 1)).slice(-10)) {
          process.stdout.write(`  period=${period} reserved-max=${r.max} epoch=${r.epoch}\n`);
        }
        if (reserved.size > 10) say(`${reserved.size - 10} older periods not shown`);
        for (const l of await forecastLines(d, s, await commandConfig())) process.stdout.write(`${l}\n`);
      });
    });
}
