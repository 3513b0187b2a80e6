/**
 * `idd status` in a terminal: the status snapshots of one or more workers (as `/status.json` serves
 * them) and the pool as the broker sees it, as plain aligned tables. User data (sequence names of
 * refused requests, worker ids) loses its control characters: a name must not move the cursor or
 * recolour the operator's terminal.
 */
import { leftText, runsOutText } from "./forecast-text.js";
import type { PoolStatus, StatusSnapshot } from "./status.js";

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
const clean = (s: string) => s.replace(CONTROL, "?");
const int = (n: number | string | null) => (n === null ? "-" : BigInt(n).toLocaleString("en-US"));
const ago = (at: number, now: number) => `${Math.max(0, (now - at) / 1000).toFixed(1)}s ago`;

const rateText = (r: number) => (r >= 100 ? `${Math.round(r).toLocaleString("en-US")}/s` : `${r.toFixed(1)}/s`);
const headroomText = (minutes: number | null, hasCounter: boolean) =>
  !hasCounter
    ? "-"
    : minutes === null
      ? "idle"
      : `${minutes >= 100 ? Math.round(minutes).toLocaleString("en-US") : minutes.toFixed(1)} min`;

/** Columns padded to their widest cell; columns named in `right` are right-aligned. */
function table(head: string[], rows: string[][], right: Set<number>): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (right.has(i) ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number)))
      .join("  ")
      .trimEnd();
  return [line(head), ...rows.map(line)];
}

function workerLines(s: StatusSnapshot, source: string): string[] {
  const ready = s.worker.ready ? (s.worker.ready.ready ? "ready" : "NOT READY") : "readiness unknown";
  const out = [
    `worker ${clean(s.worker.id)} (${source}): ${ready}, partitions ${s.worker.partitions.join(",") || "none"} of ${s.worker.routing?.partitions ?? "?"}, ${s.worker.routing?.forwarded ?? 0} requests forwarded home, up ${Math.round((s.at - s.worker.startedAt) / 1000)}s`,
  ];
  if (s.sequences.length === 0) out.push("  no sequence served by this worker yet");
  else
    out.push(
      ...table(
        [
          "SEQUENCE",
          "PERIOD",
          "PARTITION",
          "OWNER",
          "RATE",
          "HEADROOM",
          "HEADROOM-NUMBERS",
          "BLOCK",
          "IN-MEMORY",
          "REQUESTS",
          "LEFT",
          "RUNS-OUT",
        ],
        s.sequences.map((q) => [
          clean(q.sequence),
          q.period ?? "-",
          q.partition === null ? "-" : String(q.partition),
          q.owner === null ? "unowned" : clean(q.owner),
          rateText(q.ratePerSecond),
          headroomText(q.headroomMinutes, q.headroomNumbers !== null),
          int(q.headroomNumbers),
          int(q.blockSize),
          int(q.inMemory),
          int(q.requests),
          (q.forecasts ?? []).map(leftText).join("; ") || "-",
          (q.forecasts ?? []).map(runsOutText).join("; ") || "-",
        ]),
        new Set([2, 4, 5, 6, 7, 8, 9]),
      ).map((l) => `  ${l}`),
    );
  const deps = new Map((s.worker.ready?.dependencies ?? []).map((d) => [d.name, d]));
  out.push(
    `  breakers: ${s.breakers
      .map((b) => {
        const d = deps.get(b.dependency);
        const probe = d ? (d.up ? ", answers" : `, down ${Math.round(d.downForMs / 1000)}s`) : "";
        return `${b.dependency} ${b.open ? "OPEN (failing fast)" : "closed"}${probe}`;
      })
      .join("; ")}`,
  );
  out.push(
    `  errors since start: ${s.errors.totals.map((t) => `${t.code} x${t.requests}`).join(", ") || "none"}`,
    ...s.errors.recent
      .slice(-5)
      .reverse()
      .map((e) => `    ${ago(e.at, s.at)}  ${e.code}  ${clean(e.sequence)}  x${e.requests}`),
  );
  for (const g of s.gapless ?? [])
    out.push(
      `  gapless ${clean(g.sequence)}: pending ${int(g.pending)}, confirmed ${int(g.confirmed)}, voided ${int(g.voided)} (${int(g.expiredHere)} expired here), counted ${ago(g.countedAt, s.at)}`,
    );
  const grants = s.grants.slice(-5).reverse();
  out.push(
    `  recent grants: ${grants.length === 0 ? "none" : ""}`.trimEnd(),
    ...grants.map(
      (g) => `    ${ago(g.at, s.at)}  ${clean(g.sequence)}${g.period ? `/${g.period}` : ""}  ${g.first}..${g.last} (${int(g.size)})`,
    ),
  );
  return out;
}

export function poolLines(p: PoolStatus | { error: string }, scope: string): string[] {
  if ("error" in p) return [`pool: the broker could not be asked: ${p.error}`];
  return [
    `pool: group ${p.group} on ${p.topic}, ${p.state}, ${p.members} member${p.members === 1 ? "" : "s"} (${scope})`,
    ...table(
      ["PARTITION", "OWNER", "LAG", "COMMITTED", "END"],
      p.partitions.map((x) => [
        String(x.partition),
        x.owner === null ? "unowned" : clean(x.owner),
        int(x.lag),
        x.committed === null ? "-" : int(x.committed),
        int(x.end),
      ]),
      new Set([0, 2, 3, 4]),
    ).map((l) => `  ${l}`),
  ];
}

/** Every worker's part, then the pool once (from the first snapshot that has it). */
export function statusText(snapshots: { source: string; status: StatusSnapshot }[]): string {
  const lines = snapshots.flatMap((s) => [...workerLines(s.status, s.source), ""]);
  const pool = snapshots.find((s) => !("error" in s.status.pool)) ?? snapshots[0];
  if (pool) lines.push(...poolLines(pool.status.pool, `from the broker, via ${pool.source}`));
  return `${lines.join("\n")}\n`;
}
