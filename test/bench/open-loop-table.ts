/**
 * The open-loop section's table: one row per scenario and target, then the ratios idd/echo,
 * idd/echo-rdk, echo-rdk/echo, idd-crc32/echo and idd-crc32/idd (the cost of forwarding) of the
 * targets that ran; and, for a scenario run in rounds (given more than once), each ratio's median
 * over the rounds.
 */
import { quantile } from "./load-generator.js";
import type { Measured } from "./open-loop.js";

const per10k = (cpu: number | undefined, requests: number) => (cpu === undefined || requests === 0 ? undefined : (cpu / requests) * 10_000);

function row(m: Measured) {
  const { r } = m;
  // CPU per answered request means nothing when most were not answered (a stuck target spins).
  const answered = r.missing > 0 ? 0 : r.answered;
  const seconds = r.elapsedMs / 1000;
  return {
    reqPerS: r.answered / seconds,
    numPerS: r.numbers / seconds,
    p50: quantile(r.latencies, 0.5),
    p99: quantile(r.latencies, 0.99),
    p999: quantile(r.latencies, 0.999),
    cpuTarget: per10k(m.cpu.target, answered),
    cpuBroker: per10k(m.cpu.broker, answered),
    cpuDeps: per10k(m.cpu.deps, answered),
    cpuGen: per10k(m.cpu.generator, answered),
    pubPerS: (r.requests / r.publishMs) * 1000,
  };
}

/** The ratio rows, numerator/denominator: idd against the echo limit, and the cost of routing. */
const RATIOS = [
  ["idd", "echo"],
  ["idd", "echo-rdk"],
  ["echo-rdk", "echo"],
  ["idd-crc32", "echo"],
  ["idd-crc32", "echo-rdk"],
  ["idd-crc32", "idd"],
  ["idd", "idd-base"],
  ["idd-crc32", "idd-base-crc32"],
  ["idd-standalone", "idd"],
  ["idd-sentinel", "idd-standalone"],
  ["idd-cluster", "idd-standalone"],
  ["idd-gzip", "idd"],
  ["idd-snappy", "idd"],
  ["idd-lz4", "idd"],
  ["idd-zstd", "idd"],
] as const;

const fmt = (x: number | undefined, digits = 0) => (x === undefined || !Number.isFinite(x) ? "-" : x.toFixed(digits));
const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || b === 0 || !Number.isFinite(a / b) ? "-" : `${(a / b).toFixed(2)}x`;

export function printOpenLoopTable(results: Measured[], say: (line: string) => void): void {
  if (results.length === 0) return;
  const head = [
    ["scenario", 12],
    ["target", 15],
    ["req/s", 8],
    ["numbers/s", 10],
    ["p50 ms", 8],
    ["p99 ms", 8],
    ["p999 ms", 8],
    ["cpu tgt", 8],
    ["cpu kafka", 9],
    ["cpu r+m", 8],
    ["cpu gen", 8],
    ["pub/s", 8],
    ["dup", 5],
    ["missing", 7],
    ["errors", 6],
  ] as const;
  // Ratio rows name two targets: the column is as wide as the longest such name.
  const ratioNames = RATIOS.filter(([a, b]) => results.some((m) => m.target === a) && results.some((m) => m.target === b));
  const width = (i: number) => (i === 1 ? Math.max(14, ...ratioNames.map(([a, b]) => a.length + b.length + 1)) : (head[i]?.[1] as number));
  const line = (cells: string[]) => say(cells.map((c, i) => (i < 2 ? c.padEnd(width(i)) : c.padStart(width(i)))).join(" "));
  say("");
  say("open loop: cpu columns are CPU seconds per 10,000 requests: tgt = the target's 3 processes, kafka = the broker,");
  say("r+m = Redis + MongoDB (FerretDB) (idd-sentinel: primary, replica, Sentinels; idd-cluster: its 6 nodes),");
  say("gen = the load generator(s); pub/s = the generator's publish rate;");
  say("req/s and numbers/s count answered requests, from the first publish (backlog: from the release) to the last reply;");
  say("echo = kafkajs echo, echo-rdk = librdkafka echo (confluent-kafka); idd = idd on murmur2 clients (requests land home),");
  say("idd-crc32 = idd on librdkafka-default clients (most forwarded); cold = sequences created just before the run;");
  say("jump = one sequence's rate ×10 a third of the way in: its latency columns are those of the requests from the jump on;");
  say("idd-standalone, idd-sentinel, idd-cluster = idd on murmur2 clients with a Redis of their own: standalone, under");
  say("Sentinel, or a Redis Cluster (one build and settings; idd's Redis is the stack's, maybe shared);");
  say("ratio rows a/b divide a's column by b's");
  line(head.map(([h]) => h));
  const scenarios = [...new Set(results.map((m) => m.scenario))];
  for (const s of scenarios) {
    const ms = results.filter((m) => m.scenario === s);
    const rows = new Map(ms.map((m) => [m.target, row(m)]));
    for (const m of ms) {
      const x = rows.get(m.target) as ReturnType<typeof row>;
      line([
        s,
        m.target,
        fmt(x.reqPerS),
        fmt(x.numPerS),
        fmt(x.p50, 1),
        fmt(x.p99, 1),
        fmt(x.p999, 1),
        fmt(x.cpuTarget, 2),
        fmt(x.cpuBroker, 2),
        fmt(x.cpuDeps, 2),
        fmt(x.cpuGen, 2),
        fmt(x.pubPerS),
        String(m.r.duplicates),
        String(m.r.missing),
        String(m.r.errors),
      ]);
    }
    for (const [a, b] of RATIOS) {
      const x = rows.get(a);
      const y = rows.get(b);
      if (!x || !y) continue;
      const name = `${a}/${b}`;
      const unanswered = ms.filter((m) => (m.target === a || m.target === b) && m.r.missing > 0).map((m) => m.target);
      if (unanswered.length > 0) {
        say(`${s.padEnd(12)} ${name.padEnd(14)} not comparable: ${unanswered.join(", ")} left requests unanswered`);
        continue;
      }
      line([
        s,
        name,
        ratio(x.reqPerS, y.reqPerS),
        ratio(x.numPerS, y.numPerS),
        ratio(x.p50, y.p50),
        ratio(x.p99, y.p99),
        ratio(x.p999, y.p999),
        ratio(x.cpuTarget, y.cpuTarget),
        ratio(x.cpuBroker, y.cpuBroker),
        ratio(x.cpuDeps, y.cpuDeps),
        "",
        "",
        "",
        "",
        "",
      ]);
    }
  }
  printRoundRatios(roundRatios(results), say);
}

/** The median of some numbers and their range. */
export interface Spread {
  median: number;
  min: number;
  max: number;
}

function spread(xs: number[]): Spread {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
  return { median, min: s[0] as number, max: s.at(-1) as number };
}

/** One ratio a/b over the rounds of one scenario. */
export interface RoundRatio {
  scenario: string;
  pair: string;
  /** Rounds in which both targets answered every request. */
  rounds: number;
  reqPerS: Spread;
  p50: Spread;
  p99: Spread;
  cpuTarget?: Spread;
}

/** A scenario's name without its round (`paced 4000/s #2` → `paced 4000/s`). */
const base = (scenario: string) => scenario.replace(/ #\d+$/, "");

/**
 * For every scenario given more than once (`--rates 4000,4000,4000`: three rounds, the targets
 * taking turns in each), the ratio rows' values per round, as median and range over the rounds in
 * which both targets answered every request. On a busy machine one round's ratio moves with
 * whatever else ran then; the median of a few is steadier than any one of them.
 */
export function roundRatios(results: Measured[]): RoundRatio[] {
  const out: RoundRatio[] = [];
  const names = [...new Set(results.map((m) => base(m.scenario)))];
  for (const name of names) {
    const rounds = [...new Set(results.filter((m) => base(m.scenario) === name).map((m) => m.scenario))];
    if (rounds.length < 2) continue;
    for (const [a, b] of RATIOS) {
      const per = rounds.flatMap((s) => {
        const x = results.find((m) => m.scenario === s && m.target === a);
        const y = results.find((m) => m.scenario === s && m.target === b);
        if (!x || !y || x.r.missing > 0 || y.r.missing > 0) return [];
        const rx = row(x);
        const ry = row(y);
        const cpu = rx.cpuTarget !== undefined && ry.cpuTarget ? rx.cpuTarget / ry.cpuTarget : undefined;
        return [{ reqPerS: rx.reqPerS / ry.reqPerS, p50: rx.p50 / ry.p50, p99: rx.p99 / ry.p99, cpu }];
      });
      if (per.length < 2) continue;
      const cpus = per.flatMap((p) => (p.cpu === undefined ? [] : [p.cpu]));
      out.push({
        scenario: name,
        pair: `${a}/${b}`,
        rounds: per.length,
        reqPerS: spread(per.map((p) => p.reqPerS)),
        p50: spread(per.map((p) => p.p50)),
        p99: spread(per.map((p) => p.p99)),
        ...(cpus.length === per.length && { cpuTarget: spread(cpus) }),
      });
    }
  }
  return out;
}

function printRoundRatios(rows: RoundRatio[], say: (line: string) => void): void {
  if (rows.length === 0) return;
  const cell = (x: Spread | undefined) => (x ? `${x.median.toFixed(2)}x (${x.min.toFixed(2)}–${x.max.toFixed(2)})` : "-");
  const pairWidth = Math.max(14, ...rows.map((r) => r.pair.length));
  say("");
  say("scenarios run in rounds: each ratio's median over the rounds, and its range in parentheses");
  const line = (cells: string[]) =>
    say([cells[0]?.padEnd(12), cells[1]?.padEnd(pairWidth), cells[2]?.padStart(6), ...cells.slice(3).map((c) => c.padStart(20))].join(" "));
  line(["scenario", "ratio", "rounds", "req/s", "p50", "p99", "cpu tgt"]);
  for (const r of rows) line([r.scenario, r.pair, String(r.rounds), cell(r.reqPerS), cell(r.p50), cell(r.p99), cell(r.cpuTarget)]);
}
