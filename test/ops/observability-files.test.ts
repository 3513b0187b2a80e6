/**
 * Every metric the alerting rules (ops/prometheus/idd-rules.yml) and the Grafana dashboard
 * (ops/grafana/idd-dashboard.json) query is one idd exports: the names src/ops/metrics.ts
 * registers (histograms with their _bucket, _sum and _count series). The expressions are read as
 * PromQL tokens: strings, label matchers and the label lists of by/without/on/ignoring/group_left
 * are skipped, functions (a name before "(") and keywords are not metric names; every other name
 * must be idd's. Unit project: no service, no promtool.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, test } from "vitest";
import { Instrumentation } from "../../src/core/events.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { REPO_ROOT } from "../../stack/paths.js";

const KEYWORDS = new Set([
  "and",
  "or",
  "unless",
  "bool",
  "offset",
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "inf",
  "nan",
]);
const LABEL_LISTS = /\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g;

/** The metric names a PromQL expression reads. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // strings
    .replace(/\{[^}]*\}/g, "") // label matchers
    .replace(/\[[^\]]*\]/g, "") // range selectors
    .replace(LABEL_LISTS, " ") // by (sequence, bound) …
    .replace(/\b(group_left|group_right)\b/g, " ");
  const names: string[] = [];
  for (const m of bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const after = bare.slice((m.index ?? 0) + m[0].length).trimStart();
    if (after.startsWith("(") || KEYWORDS.has(m[0].toLowerCase())) continue;
    if (/^\d/.test(m[0])) continue;
    names.push(m[0]);
  }
  return names;
}

/** The `expr:` of every rule of a Prometheus rules file (single-line, or a `|` block). */
function ruleExprs(yaml: string): string[] {
  const lines = yaml.split("\n");
  const out: string[] = [];
  lines.forEach((line, i) => {
    const m = /^(\s*)expr:\s*(.*)$/.exec(line);
    if (!m) return;
    if (m[2] !== "|" && m[2] !== ">") {
      out.push(m[2] as string);
      return;
    }
    const indent = (m[1] as string).length;
    const block: string[] = [];
    for (const next of lines.slice(i + 1)) {
      if (next.trim() !== "" && next.search(/\S/) <= indent) break;
      block.push(next.trim());
    }
    out.push(block.join(" "));
  });
  return out;
}

/** The targets' `expr` of every panel of a Grafana dashboard. */
function dashboardExprs(json: string): string[] {
  const d = JSON.parse(json) as { panels: { targets?: { expr: string }[] }[] };
  return d.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
}

async function exported(): Promise<Set<string>> {
  const registry = createMetrics({
    events: new Instrumentation(),
    counters: () => [],
    roundTrips: () => ({ redis: 0, mongodb: 0 }),
    maxSequences: 10,
    ready: () => true,
    forecasts: () => [],
  });
  const names = new Set<string>();
  for (const m of await registry.getMetricsAsJSON()) {
    names.add(m.name);
    if (String(m.type) === "histogram" || String(m.type) === "summary")
      for (const s of ["_bucket", "_sum", "_count"]) names.add(`${m.name}${s}`);
  }
  return names;
}

test("the expression reader finds metric names, not functions, labels or keywords", () => {
  expect(
    metricNames(
      'sum by (status) (rate(idd_requests_total{status!="OK",x="up"}[5m])) / ignoring (status) group_left sum (rate(idd_requests_total[5m])) > 0.05',
    ),
  ).toEqual(["idd_requests_total", "idd_requests_total"]);
  expect(metricNames("histogram_quantile(0.99, sum by (le) (rate(idd_step_seconds_bucket[5m])))")).toEqual(["idd_step_seconds_bucket"]);
  expect(metricNames("idd_sequence_exhaustion_seconds < 30 * 86400")).toEqual(["idd_sequence_exhaustion_seconds"]);
  expect(metricNames("up == 0 and on (instance) idd_ready")).toEqual(["up", "idd_ready"]);
});

test("every metric the alerting rules and the dashboard query is one idd exports", async () => {
  const names = await exported();
  const rules = ruleExprs(readFileSync(join(REPO_ROOT, "ops/prometheus/idd-rules.yml"), "utf8"));
  const panels = dashboardExprs(readFileSync(join(REPO_ROOT, "ops/grafana/idd-dashboard.json"), "utf8"));
  expect(rules).toHaveLength(9);
  expect(panels.length).toBeGreaterThanOrEqual(10);
  for (const [what, exprs] of [
    ["ops/prometheus/idd-rules.yml", rules],
    ["ops/grafana/idd-dashboard.json", panels],
  ] as const) {
    for (const expr of exprs) {
      const used = metricNames(expr);
      expect(used.length, `${what}: no metric in ${expr}`).toBeGreaterThan(0);
      for (const name of used) expect(names.has(name), `${what}: ${name} (in ${expr}) is not a metric idd exports`).toBe(true);
    }
  }
  // The rules cover what docs/operations.md promises: capacity, errors, dead letters, readiness, routing.
  for (const n of [
    "idd_sequence_capacity_left_ratio",
    "idd_sequence_exhaustion_seconds",
    "idd_requests_total",
    "idd_dead_letters_total",
    "idd_ready",
    "idd_requests_forwarded_total",
  ])
    expect(
      rules.some((e) => metricNames(e).includes(n)),
      n,
    ).toBe(true);
});
