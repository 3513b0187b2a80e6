/**
 * Where an idd worker's step time went during one open-loop run: the workers' `/metrics` histograms
 * `idd_step_phase_seconds{phase}` (parse, issue, deliver) and `idd_step_records`, read before and
 * after the run and subtracted, summed over the pool. A regression then shows in the phase it lives in.
 * With them, `idd_request_wait_seconds{from}`: how long requests waited in Kafka before their step,
 * as clients sent them (`wait:client`) and as workers forwarded them home (`wait:worker`, the hop).
 */

export interface PhaseTotals {
  /** Per phase: seconds summed, steps counted, and the cumulative bucket counts by upper bound. */
  phases: Map<string, { sum: number; count: number; buckets: Map<number, number> }>;
  records: number;
}

const LINE = /^(idd_step_phase_seconds|idd_request_wait_seconds|idd_step_records)_(sum|count|bucket)\{?([^}]*)\}? (\S+)$/;

/** Reads and sums the step histograms of every worker (a worker that does not answer counts nothing). */
export async function readPhases(urls: readonly string[]): Promise<PhaseTotals> {
  const out: PhaseTotals = { phases: new Map(), records: 0 };
  const texts = await Promise.all(
    urls.map((u) =>
      fetch(u).then(
        (r) => (r.ok ? r.text() : ""),
        () => "",
      ),
    ),
  );
  for (const text of texts) {
    for (const line of text.split("\n")) {
      const m = LINE.exec(line);
      if (!m) continue;
      const [, metric, part, labels = "", raw] = m;
      const value = Number(raw);
      if (metric === "idd_step_records") {
        if (part === "sum") out.records += value;
        continue;
      }
      const from = /from="([^"]+)"/.exec(labels)?.[1];
      const phase = metric === "idd_request_wait_seconds" ? from && `wait:${from}` : /phase="([^"]+)"/.exec(labels)?.[1];
      if (!phase) continue;
      const p = out.phases.get(phase) ?? { sum: 0, count: 0, buckets: new Map() };
      out.phases.set(phase, p);
      if (part === "sum") p.sum += value;
      else if (part === "count") p.count += value;
      else {
        const le = /le="([^"]+)"/.exec(labels)?.[1] as string;
        const bound = le === "+Inf" ? Number.POSITIVE_INFINITY : Number(le);
        p.buckets.set(bound, (p.buckets.get(bound) ?? 0) + value);
      }
    }
  }
  return out;
}

export function phasesBetween(before: PhaseTotals, after: PhaseTotals): PhaseTotals {
  const out: PhaseTotals = { phases: new Map(), records: after.records - before.records };
  for (const [name, a] of after.phases) {
    const b = before.phases.get(name);
    const buckets = new Map([...a.buckets].map(([le, n]) => [le, n - (b?.buckets.get(le) ?? 0)]));
    out.phases.set(name, { sum: a.sum - (b?.sum ?? 0), count: a.count - (b?.count ?? 0), buckets });
  }
  return out;
}

/** The bucket bound at or above the q-quantile of one phase's steps (a bound, from the histogram). */
function quantileBound(buckets: Map<number, number>, count: number, q: number): number {
  const bounds = [...buckets.keys()].sort((x, y) => x - y);
  for (const le of bounds) if ((buckets.get(le) ?? 0) >= q * count) return le;
  return Number.NaN;
}

const PHASES = ["parse", "issue", "deliver"];

/** One table: per run of an idd target, its steps and per phase the mean and p99 bound per step, µs per request and share. */
export function printPhases(rows: { scenario: string; target: string; phases: PhaseTotals }[], say: (line: string) => void): void {
  if (rows.length === 0) return;
  say("");
  say("step phases of the idd workers (from /metrics idd_step_phase_seconds, this run only, summed over the pool):");
  say("per phase: mean ms per step / p99 bound ms per step (histogram bucket) / µs per request / share of step time");
  const cell = (s: string, n: number) => s.padStart(n);
  say(
    `${"scenario".padEnd(12)} ${"target".padEnd(10)} ${cell("steps", 7)} ${cell("req/step", 8)} ` +
      PHASES.map((p) => cell(p, 30)).join(" "),
  );
  for (const { scenario, target, phases } of rows) {
    const steps = phases.phases.get("issue")?.count ?? 0;
    const total = PHASES.reduce((s, p) => s + (phases.phases.get(p)?.sum ?? 0), 0);
    const cells = PHASES.map((name) => {
      const p = phases.phases.get(name);
      if (!p || p.count === 0) return cell("-", 30);
      const mean = (p.sum / p.count) * 1000;
      const p99 = quantileBound(p.buckets, p.count, 0.99) * 1000;
      const perReq = phases.records > 0 ? (p.sum / phases.records) * 1e6 : Number.NaN;
      return cell(`${mean.toFixed(2)} / ${p99.toFixed(1)} / ${perReq.toFixed(0)}µs / ${((p.sum / total) * 100).toFixed(0)}%`, 30);
    });
    say(
      `${scenario.padEnd(12)} ${target.padEnd(10)} ${cell(String(steps), 7)} ${cell(steps > 0 ? (phases.records / steps).toFixed(1) : "-", 8)} ${cells.join(" ")}`,
    );
  }
  say("");
  say("time in Kafka before the step began (idd_request_wait_seconds, from each record's timestamp):");
  say("per sender: requests / mean ms / p50 bound ms / p99 bound ms (histogram buckets); worker = forwarded home, the hop's wait");
  say(`${"scenario".padEnd(12)} ${"target".padEnd(10)} ${cell("client", 30)} ${cell("worker", 30)}`);
  for (const { scenario, target, phases } of rows) {
    const cells = ["wait:client", "wait:worker"].map((name) => {
      const p = phases.phases.get(name);
      if (!p || p.count === 0) return cell("-", 30);
      const ms = (q: number) => (quantileBound(p.buckets, p.count, q) * 1000).toFixed(1);
      return cell(`${p.count} / ${((p.sum / p.count) * 1000).toFixed(1)} / ${ms(0.5)} / ${ms(0.99)}`, 30);
    });
    say(`${scenario.padEnd(12)} ${target.padEnd(10)} ${cells.join(" ")}`);
  }
}
