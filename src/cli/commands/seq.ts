/** `idd seq create|update|list|show`: define and inspect sequences in MongoDB. */
import type { Command } from "commander";
import { IddError } from "../../core/errors.js";
import { PERIODS } from "../../core/period.js";
import { defineSequence, GRANT_LOG_MODES, type SequenceDef } from "../../sequences/definition.js";
import { KIND_NAMES, KINDS } from "../../sequences/kinds/table.js";
import { runsOutAt } from "../../sequences/snowflake-layout.js";
import { type InForce, inForce } from "../../storage/reservation-in-force.js";
import { withStore } from "../load-config.js";
import { say } from "../output.js";

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

export function addSeqCommand(program: Command): void {
  const seq = program.command("seq").description("define and inspect sequences");

  seq
    .command("create")
    .argument("<name>", "1-64 characters of A-Z a-z 0-9 . _ -")
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
    .description("define a sequence")
    .action(async (name: string, o: SeqOptions & { kind: string; start: string }) => {
      const def = defineSequence({ name, ...o }, new Date());
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
    .description("show one sequence and its current reservation")
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
      });
    });
}
