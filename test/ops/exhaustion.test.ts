/**
 * A `{seq:4}` sequence loaded until it runs out, through a real worker process against the real
 * stack (issue #31, Must show): before it runs out, its forecast is on the status page (headless
 * Chromium), in /status.json, in /metrics (`idd_sequence_exhaustion_seconds`) and in `idd seq show`;
 * the worker logs the capacity warning, then an error once it has run out, and requests get
 * SEQUENCE_EXHAUSTED. The /metrics series recorded along the way, one scrape a second, is then fed
 * to `promtool test rules` at one sample a minute: the under-a-day alert and the run-out alert fire
 * on that shape. What was seen is kept in test-artifacts/exhaustion.json (and the promtool test as
 * test-artifacts/exhaustion.rules-test.yml).
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import type { StatusSnapshot } from "../../src/ops/status.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { REPO_ROOT } from "../../stack/paths.js";
import { dumpDom, visibleText } from "../support/chromium.js";
import { runIdd } from "../support/cli.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { freePort } from "../support/private-redis.js";
import { promtool, rulesFolder } from "../support/promtool.js";
import { waitFor } from "../support/wait.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker, type WorkerProcess } from "../support/workers.js";

const services = ownDatabase(inject("services"), "exhaustion");
const browser = inject("chromium");
const run = randomUUID().slice(0, 8);
const sequence = `qj-${run}`;
const topic = `exhaustion.${run}.requests`;
/**
 * 4000..9999: 6,000 serials of `{seq:4}`, at about RATE a second: half a minute; while the forecast
 * is read (the status page, `idd seq show`: seconds each on a busy machine), SLOW a second, so the
 * sequence cannot run out before they are read.
 */
const START = 4000;
const RATE = 200;
const SLOW = 20;
const artifacts = join(REPO_ROOT, "test-artifacts");

const store = new Store(services.mongodbUrl);
const queries = new MongoQueries(services.mongodbUrl);
let worker: WorkerProcess;
let client: IdClient;
let url = "";
const env: NodeJS.ProcessEnv = {};

beforeAll(async () => {
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  Object.assign(env, serviceEnv(services), {
    IDD_REQUEST_TOPIC: topic,
    IDD_DLQ_TOPIC: `exhaustion.${run}.dlq`,
    IDD_GROUP_ID: `exhaustion-${run}`,
    IDD_REQUEST_PARTITIONS: "1",
    IDD_HTTP_PORT: String(port),
    // Sample windows of a second: the forecast's rate is over the last 9 s (the default is 90 s).
    IDD_SAMPLE_MS: "1000",
    IDD_MIN_BLOCK: "50",
    IDD_INITIAL_BLOCK: "200",
  });
  await store.createSequence(defineSequence({ name: sequence, kind: "formatted", format: "QJ{seq:4}", start: String(START) }, new Date()));
  worker = startWorker(`exhaustion-${run}`, env);
  await worker.assigned;
  client = await IdClient.connect({ brokers: services.kafkaBrokers, requestTopic: topic, timeoutMs: 30_000 });
}, 180_000);

afterAll(async () => {
  await client?.close();
  if (worker) await stopWorker(worker);
  await queries.dropDatabase();
  await store.close();
});

interface Scrape {
  /** ms since the load started */
  t: number;
  exhaustionSeconds: number | null;
  left: number | null;
  ratio: number | null;
}

const gauge = (metrics: string, name: string): number | null => {
  const line = metrics.split("\n").find((l) => l.startsWith(`${name}{sequence="${sequence}"`));
  return line === undefined ? null : Number(line.slice(line.lastIndexOf(" ") + 1));
};

/** Go's humanizeDuration (Prometheus templates) for whole seconds. */
function humanizeDuration(v: number): string {
  if (v === 0) return "0s";
  const [d, h, m, s] = [Math.floor(v / 86_400), Math.floor(v / 3600) % 24, Math.floor(v / 60) % 60, v % 60];
  if (d) return `${d}d ${h}h ${m}m ${s}s`;
  if (h) return `${h}h ${m}m ${s}s`;
  if (m) return `${m}m ${s}s`;
  return `${s}s`;
}

test("a {seq:4} sequence runs out: forecast on the page, /metrics and seq show first, the warning logged, the alert fires", async () => {
  const started = Date.now();
  const since = () => Date.now() - started;
  const scrapes: Scrape[] = [];
  const seen: Record<string, unknown> = {};
  let exhaustedAt: number | undefined;
  let issued = 0;
  let rate = RATE;
  /** Numbers issued so far, by when (ms since the start): the rate the load really reached. */
  const issuedAt: { t: number; issued: number }[] = [];
  const reached = (windowMs: number) => {
    const now = since();
    const first = issuedAt.find((x) => x.t >= now - windowMs);
    return first === undefined ? 0 : ((issued - first.issued) * 1000) / Math.max(1, now - first.t);
  };

  // The load: 4 numbers at a time at `rate` a second, until a request is refused; then single
  // numbers, so the last serials are used too (a request wanting more than is left is refused whole).
  const load = (async () => {
    let count = 4;
    for (;;) {
      const tick = Date.now();
      try {
        const r = await client.next(sequence, count);
        issued += r.formatted?.length ?? 0;
        issuedAt.push({ t: since(), issued });
      } catch (e) {
        if ((e as { code?: string }).code !== "SEQUENCE_EXHAUSTED") throw e;
        if (count === 1) {
          exhaustedAt = since();
          return;
        }
        count = 1;
      }
      await new Promise((r) => setTimeout(r, Math.max(0, (1000 * count) / rate - (Date.now() - tick))));
    }
  })();
  load.catch(() => {}); // awaited below; a failed test must not leave it unhandled

  // One scrape of /metrics a second, until a little after the end.
  const scraping = (async () => {
    while (exhaustedAt === undefined || since() < exhaustedAt + 3000) {
      const metrics = await (await fetch(`${url}/metrics`)).text();
      const exhaustion = gauge(metrics, "idd_sequence_exhaustion_seconds");
      scrapes.push({
        t: since(),
        exhaustionSeconds: exhaustion,
        left: gauge(metrics, "idd_sequence_capacity_left"),
        ratio: gauge(metrics, "idd_sequence_capacity_left_ratio"),
      });
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  scraping.catch(() => {});

  // Before it runs out: the forecast in /status.json, on the page and in idd seq show.
  let before: StatusSnapshot["sequences"][number] | undefined;
  await waitFor(
    "a forecast under a minute, with about half left",
    async () => {
      const s = (await (await fetch(`${url}/status.json`)).json()) as StatusSnapshot;
      before = s.sequences.find((q) => q.sequence === sequence);
      const f = before?.forecasts?.[0];
      return f !== undefined && f.exhaustionSeconds !== null && f.left < 3500 && f.left > 1000;
    },
    { timeoutMs: 60_000, everyMs: 250 },
  );
  // What the load reached over the forecast's 9 windows, however fast the machine let it go.
  const reachedRate = reached(9000);
  rate = SLOW;
  const forecast = before?.forecasts?.[0];
  expect(forecast).toMatchObject({ bound: "seq-width", total: 9999 - START + 1 });
  expect(forecast?.ratePerSecond).toBeGreaterThan(reachedRate * 0.5);
  expect(forecast?.ratePerSecond).toBeLessThan(reachedRate * 1.5);
  seen.statusJson = { at: since(), reachedRate, ...forecast };
  if (!browser.path) throw new Error(`no headless browser: ${browser.problem}`);
  const dom = await dumpDom(browser.path, `${url}/status`, { budgetMs: 2000 });
  const row = visibleText(/<tr data-sequence="[^"]*"[^>]*>([\s\S]*?)<\/tr>/.exec(dom)?.[1] ?? "");
  expect(row).toContain(sequence);
  expect(row).toMatch(/to seq-width \(\d+\.\d%\)/);
  expect(row).toMatch(/in [\d.]+ (s|min)/);
  seen.statusPage = { at: since(), row };
  const show = await runIdd(["seq", "show", sequence], env);
  expect(show.status, show.stderr).toBe(0);
  const line = show.stdout.split("\n").find((l) => l.includes("forecast"));
  expect(line).toMatch(
    /forecast period=- bound=seq-width left=\d+ of 6000 \(\d+\.\d+%\) rate=\d+(\.\d+)?\/s runs-out="(in [\d.]+ (s|min)|all claimed[^"]*)"/,
  );
  seen.seqShow = { at: since(), line };
  rate = RATE;

  await load;
  await scraping;
  expect(exhaustedAt).toBeDefined();
  expect(issued).toBeLessThanOrEqual(9999 - START + 1);
  await waitFor("the run-out error in the log", () => worker.log.some((l) => l.includes('"code":"SEQUENCE_EXHAUSTED"')), {
    timeoutMs: 10_000,
  });
  const capacityLines = worker.log.filter((l) => l.includes('"component":"capacity"')).map((l) => JSON.parse(l) as Record<string, unknown>);
  const warning = capacityLines.find((l) => l.level === 40);
  const error = capacityLines.find((l) => l.level === 50);
  expect(warning?.msg).toMatch(new RegExp(`^sequence ${sequence} runs out in [\\d.]+ (s|min) at its current rate`));
  expect(error?.msg).toBe(`sequence ${sequence} has run out of serials its {seq:N} width prints`);
  expect(Number(warning?.time) - started).toBeLessThan(exhaustedAt as number);

  // /metrics showed the forecast before the end, and nothing left after it.
  const live = scrapes.filter((s) => s.exhaustionSeconds !== null && s.left !== null);
  const counting = live.filter((s) => (s.left as number) > 0 && Number.isFinite(s.exhaustionSeconds));
  expect(counting.length).toBeGreaterThanOrEqual(5);
  expect(live.at(-1)).toMatchObject({ exhaustionSeconds: 0, left: 0, ratio: 0 });

  // The same shape for promtool, one scrape a minute: the alerts fire on it.
  const values = (pick: (s: Scrape) => number | null) =>
    live.map((s) => {
      const v = pick(s) as number;
      return Number.isFinite(v) ? String(Math.round(v)) : "+Inf";
    });
  const exhaustion = values((s) => s.exhaustionSeconds);
  const left = values((s) => s.left);
  const firstUnderDay = exhaustion.findIndex((v) => v !== "+Inf" && Number(v) < 86_400);
  const firstEmpty = left.indexOf("0");
  // Under a day for 10 minutes (the rule's `for`); the run-out alert at once. The series stays at
  // 0 after the end, so the shape is extended by 12 minutes of the last value.
  const tail = (v: string[]) => [...v, ...Array(12).fill(v.at(-1))].join(" ");
  const fires = firstUnderDay + 10;
  const labels = `{sequence="${sequence}",bound="seq-width"}`;
  const rulesTest = `rule_files: [idd-rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'idd_sequence_exhaustion_seconds${labels}'
        values: "${tail(exhaustion)}"
      - series: 'idd_sequence_capacity_left${labels}'
        values: "${tail(left)}"
    alert_rule_test:
      - eval_time: ${fires - 1}m
        alertname: IddSequenceExhaustionUnder1Day
        exp_alerts: []
      - eval_time: ${fires}m
        alertname: IddSequenceExhaustionUnder1Day
        exp_alerts:
          - exp_labels: { severity: critical, sequence: ${sequence}, bound: seq-width }
            exp_annotations:
              summary: "idd sequence ${sequence} runs out in ${humanizeDuration(Number(exhaustion[fires] ?? exhaustion.at(-1)))} at its current rate (seq-width)"
      - eval_time: ${firstEmpty - 1}m
        alertname: IddSequenceExhausted
        exp_alerts: []
      - eval_time: ${firstEmpty}m
        alertname: IddSequenceExhausted
        exp_alerts:
          - exp_labels: { severity: critical, sequence: ${sequence}, bound: seq-width }
            exp_annotations:
              summary: "idd sequence ${sequence} has run out (seq-width): its requests are answered SEQUENCE_EXHAUSTED (or WORKER_IDS_EXHAUSTED)"
`;
  const r = await promtool(["test", "rules", "tests.yml"], rulesFolder(rulesTest));
  mkdirSync(artifacts, { recursive: true });
  writeFileSync(join(artifacts, "exhaustion.rules-test.yml"), rulesTest);
  seen.promtool = { status: r.status, output: r.output.trim(), underADayFrom: firstUnderDay, firesAt: fires, runOutAt: firstEmpty };
  seen.run = {
    issued,
    exhaustedAtMs: exhaustedAt,
    warningAtMs: Number(warning?.time) - started,
    errorAtMs: Number(error?.time) - started,
    warning,
    error,
    scrapes,
  };
  writeFileSync(join(artifacts, "exhaustion.json"), `${JSON.stringify(seen, null, 2)}\n`);
  expect(firstUnderDay).toBeGreaterThanOrEqual(0);
  expect(firstUnderDay).toBeLessThan(firstEmpty);
  expect(r.output).toContain("SUCCESS");
  expect(r.status).toBe(0);
}, 240_000);
