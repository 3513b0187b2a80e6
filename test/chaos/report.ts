/** The run's tables, as `npm run chaos` and the chaos test print them (test/chaos/README.md: Output). */
import { join } from "node:path";
import type { HostileStats } from "./phases/hostile.js";
import type { OverloadStats } from "./phases/overload.js";
import type { ChaosResult } from "./results.js";

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join("  ")).join("\n");
}

const ms = (n: number | null) => (n === null ? "—" : n.toFixed(0));

/** The overload and hostile phases' own numbers (empty when none ran). */
function rawTables(r: ChaosResult): string[] {
  const lines: string[] = [];
  const overloads = r.phases.filter((p) => p.overload);
  if (overloads.length > 0) {
    const rows = [
      ["phase", "burst", "published s", "drained s", "req/s", "p50/p99/max ms", "missing", "duplicates", "error replies", "crashes"],
    ];
    for (const p of overloads) {
      const o = p.overload as OverloadStats;
      rows.push([
        p.name,
        String(o.requests),
        (o.publishMs / 1000).toFixed(1),
        o.drainMs === null ? "NOT DRAINED" : (o.drainMs / 1000).toFixed(1),
        o.repliesPerSecond === null ? "—" : o.repliesPerSecond.toFixed(0),
        `${ms(o.p50Ms)}/${ms(o.p99Ms)}/${ms(o.maxMs)}`,
        String(o.missing),
        String(o.duplicates),
        Object.entries(o.errors)
          .map(([c, n]) => `${c}:${n}`)
          .join(" ") || "—",
        String(o.crashes),
      ]);
    }
    lines.push(
      "overload (open-loop burst from a raw kafkajs producer; every request answered once):",
      table(rows).replace(/^/gm, "  "),
      "",
    );
  }
  for (const p of r.phases.filter((x) => x.hostile)) {
    const h = p.hostile as HostileStats;
    const rows = [["kind", "expected", "sent", "as expected", "wrong", "missing", "duplicates"]];
    for (const [kind, k] of Object.entries(h.kinds))
      rows.push([kind, k.expected, String(k.sent), String(k.asExpected), String(k.wrong), String(k.missing), String(k.duplicates)]);
    lines.push(
      `hostile ${p.name} (raw kafkajs producer): all handled in ${h.drainMs === null ? "NOT ALL HANDLED" : `${(h.drainMs / 1000).toFixed(1)} s`}, ` +
        `dead letters with a wrong source ${h.badSources}, consumer crashes ${h.crashes}, ` +
        `then ${h.fresh.ok}/${h.fresh.requests} fresh requests ok, p50 ${ms(h.fresh.p50Ms)} ms, max ${ms(h.fresh.maxMs)} ms`,
      table(rows).replace(/^/gm, "  "),
      "",
    );
  }
  return lines;
}

export function formatReport(r: ChaosResult): string {
  const rows = [
    [
      "phase",
      "requests",
      "ok",
      "errors",
      "largest gap",
      "p50/p99 ms",
      "longest wait ms",
      "first ok ms",
      "longest stall ms",
      "inject→ok ms",
      "heal→ok ms",
    ],
  ];
  for (const p of r.phases) {
    const errs =
      Object.entries(p.errors)
        .sort(([, a], [, b]) => b - a)
        .map(([c, n]) => `${c}:${n}`)
        .join(" ") || "—";
    rows.push([
      p.name,
      String(p.requests),
      String(p.ok),
      errs,
      String(p.largestGap),
      `${ms(p.p50Ms)}/${ms(p.p99Ms)}`,
      ms(p.maxWaitMs),
      p.kind === "warmup" ? "—" : ms(p.firstOkMs),
      p.kind === "warmup" ? "—" : ms(p.stallMs),
      p.kind === "warmup" ? "—" : p.recovered ? ms(p.injectToOkMs) : "NOT RECOVERED",
      p.kind === "warmup" ? "—" : ms(p.healToOkMs),
    ]);
  }
  for (const n of r.notRun) rows.push([n, "not run", "", "", "", "", "", "", "", "", ""]);
  const lines = [
    "",
    `chaos profile ${r.profile} (seed ${r.seed})`,
    table(rows),
    "",
    "phase notes:",
    ...r.phases.filter((p) => p.notes.length > 0).map((p) => `  ${p.name}: ${p.notes.join("; ")}`),
    "",
    ...rawTables(r),
    "gaps per (sequence, period), checked against MongoDB's grants and reservations (G4):",
    table([
      ["counter", "numbers", "largest gap", "largest block", "largest raise", "never granted: killed workers", "replay headroom"],
      ...r.counters.map((c) => [
        c.counter,
        String(c.numbers),
        c.ungranted ? "— (no blocks)" : String(c.largestGap),
        String(c.gaps?.largestBlock ?? "—"),
        String(c.gaps?.largestReservationStep ?? "—"),
        String(c.gaps?.unlogged.killed ?? "—"),
        String(c.gaps?.unlogged.replay ?? "—"),
      ]),
    ]).replace(/^/gm, "  "),
    "",
    `requests ${r.requests} (ok ${r.ok}, typed errors ${r.typedErrors}, unaccounted ${r.unaccountedCount}), numbers ${r.numbers}`,
    `load ${(r.loadMs / 1000).toFixed(1)} s, ${r.requestsPerSecond.toFixed(0)} req/s achieved`,
    `duplicates ${r.duplicates.length}, order violations ${r.orderViolations.length}, unexplained gaps ${r.gapViolations.length} (history checked in ${(r.checkMs / 1000).toFixed(1)} s)`,
  ];
  const list = (title: string, items: string[]) => {
    if (items.length > 0) lines.push(`${title}:`, ...items.slice(0, 20).map((i) => `  ${i}`));
  };
  list("duplicates", r.duplicates);
  list("order violations", r.orderViolations);
  list("unexplained gaps (G4)", r.gapViolations);
  for (const a of r.audits)
    lines.push(
      `idd audit ${a.sequence}: ${a.mode}, ${a.strict ? "strict" : "relaxed"}, answered ${a.answered}, ${Object.entries(a.gaps)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ")}${
        Object.keys(a.givenUpWhy).length > 0
          ? ` (given up: ${Object.entries(a.givenUpWhy)
              .map(([why, n]) => `${why.startsWith("no release") ? "no release" : why} ${n}`)
              .join(", ")})`
          : ""
      }`,
    );
  list("idd audit disagreements (#21)", r.auditDisagreements);
  if (r.gapless) {
    const codes = Object.entries(r.gapless.codes).map(([c, n]) => `${c} ${n}`);
    lines.push(
      r.gapless.audit,
      `gapless settlements: ${r.gapless.settlements} sent, ${r.gapless.settled} settled${codes.length > 0 ? `, failed: ${codes.join(", ")}` : ""}`,
    );
    list("gapless settlements the audit does not show (#21)", r.gapless.disagreements);
  }
  list("unaccounted requests (first 20)", r.unaccounted);
  list("failed phase checks", r.phaseFailures);
  list("unhandled promise rejections", r.unhandledRejections);
  list("unexpected worker exits", r.unexpectedExits);
  list("workers alive but out of the consumer group (replaced)", r.zombies);
  list("worker errors (idd's own error/fatal log lines, consumer crashes)", r.workerErrors);
  lines.push(`worker logs: ${r.workerLogDir}; stack logs: ${join(r.stackDir, "logs")} (the run before's: ${join(r.stackDir, "previous")})`);
  lines.push(r.passed ? "chaos: PASSED" : `chaos: FAILED — ${r.failures.join("; ")}`, "");
  return lines.join("\n");
}
