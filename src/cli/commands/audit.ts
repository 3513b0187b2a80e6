/** `idd audit`: explains every number of a sequence's series that no client was answered, from MongoDB's log. */
import { createWriteStream } from "node:fs";
import type { Writable } from "node:stream";
import { type Command, InvalidArgumentError } from "commander";
import { type AuditSelection, audit } from "../../audit/audit.js";
import { REASON_NAMES, REASONS } from "../../audit/reasons.js";
import { CSV_HEADER, csvRow, gapJson, summaryJson, summaryLines } from "../../audit/report.js";
import { IddError } from "../../core/errors.js";
import { changeSeenWithinMs } from "../../sequences/cache.js";
import { Store } from "../../storage/store.js";
import { commandConfig } from "../load-config.js";
import { EXIT, say } from "../output.js";

interface AuditCliOptions {
  period?: string;
  range?: { first: bigint; last: bigint };
  from?: Date;
  to?: Date;
  json?: boolean;
  csv?: string;
  progressMs: number;
}

const numbers = (v: string) => {
  const m = /^(\d+)\.\.(\d+)$/.exec(v.trim());
  if (!m || BigInt(m[1] as string) > BigInt(m[2] as string)) throw new InvalidArgumentError("must be FIRST..LAST, e.g. 1000..2000");
  return { first: BigInt(m[1] as string), last: BigInt(m[2] as string) };
};
const date = (v: string) => {
  const d = new Date(v);
  if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(d.getTime()))
    throw new InvalidArgumentError("must be an ISO date, e.g. 2026-01-01 or 2026-01-01T00:00:00+01:00");
  return d;
};
const period = (v: string) => {
  if (!/^\d{1,8}$/.test(v)) throw new InvalidArgumentError("must be a period or its start: yyyy, yyyyMM or yyyyMMdd");
  return v;
};
const millis = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError("must be a whole number of milliseconds (0: none)");
  return n;
};

/** Writes a line, waiting when the stream's buffer is full (millions of gaps stay out of memory). */
async function line(out: Writable, text: string): Promise<void> {
  if (!out.write(`${text}\n`)) await new Promise((resolve) => out.once("drain", resolve));
}

export function addAuditCommand(program: Command): void {
  program
    .command("audit")
    .argument("<sequence>", "the sequence to audit")
    .option("--period <period>", "only the counters whose period starts with this (2026: every period of 2026; 20261103: that day)", period)
    .option("--range <first..last>", "only these numbers", numbers)
    .option("--from <date>", "only numbers answered (recorded; else granted) at or after this time", date)
    .option("--to <date>", "only numbers answered (recorded; else granted) before this time (default: now)", date)
    .option("--json", "print the gaps and the summary as one JSON document on stdout")
    .option("--csv <file>", "write one row per gap range to <file>: period,first,last,count,reason,worker,time,evidence")
    .option("--progress-ms <ms>", "report progress on stderr this often (0: never)", millis, 2000)
    .description("list every number of a sequence's series no client was answered, each with its reason from MongoDB's log")
    .addHelpText(
      "after",
      `
The series runs from the first to the last number issued (in each period, for sequences that restart).
A number not answered is one of:
${REASON_NAMES.map((r) => `  ${r.padEnd(16)} ${REASONS[r].doc}`).join("\n")}
Sequences created or updated with --audit record their answers (once per batch), so every number is
checked; for other sequences, and blocks claimed before auditing began, only whole blocks can be
checked: a block's unanswered tail cannot be told from answered numbers, and the summary says so.
Exit codes: 0 every gap explained, 3 some numbers unexplained (AUDIT_UNEXPLAINED; they are named),
2 could not run (usage, unknown sequence, services).`,
    )
    .exitOverride((e) => process.exit(e.exitCode === 0 ? EXIT.ok : EXIT.error))
    .action(async (name: string, o: AuditCliOptions) => {
      const selection: AuditSelection = {
        ...(o.period !== undefined && { period: o.period }),
        ...(o.range && { range: o.range }),
        ...((o.from || o.to) && { dates: { from: o.from ?? new Date(0), to: o.to ?? new Date() } }),
      };
      if (selection.dates && selection.dates.from >= selection.dates.to) throw new IddError("AUDIT_INVALID", "--from must be before --to");
      const c = await commandConfig();
      // FerretDB sorts a counter's records before it answers: seconds per 100,000 of them.
      const store = new Store(c.services.mongodbUrl, { socketTimeoutMS: 600_000 });
      const csv = o.csv ? createWriteStream(o.csv) : undefined;
      const out = process.stdout;
      try {
        if (csv) await line(csv, CSV_HEADER);
        if (o.json) out.write(`{"gaps":[`);
        let first = true;
        const r = await audit(store, {
          sequence: name,
          ...selection,
          settleMs: changeSeenWithinMs(c.sequenceCacheMs),
          progressMs: o.progressMs,
          progress: (l) => say(`audit: ${l}`),
          onGap: async (g) => {
            if (csv) await line(csv, csvRow(g));
            if (o.json) {
              await line(out, `${first ? "" : ","}${JSON.stringify(gapJson(g))}`);
              first = false;
            }
          },
        });
        if (o.json) out.write(`],"summary":${JSON.stringify(summaryJson(r))}}\n`);
        else for (const l of summaryLines(r)) out.write(`${l}\n`);
        if (!r.explained) {
          const t = r.total.gaps.unexplained;
          const named = r.unexplained.slice(0, 20).map((g) => `${g.period === null ? "" : `${g.period}:`}${g.first}..${g.last}`);
          say(
            `AUDIT_UNEXPLAINED: ${t.numbers} numbers in ${t.ranges} ranges are not explained by MongoDB's log: ${named.join(", ")}${t.ranges > named.length ? ", …" : ""}`,
          );
        }
        process.exitCode = r.explained ? EXIT.ok : EXIT.unexplained;
      } finally {
        await store.close();
        if (csv) await new Promise((resolve) => csv.end(resolve));
      }
    });
}
