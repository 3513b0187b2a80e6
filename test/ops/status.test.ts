/**
 * The status page as a person sees it: a real worker under load from a client on three sequences,
 * plus deliberately bad requests (an unknown sequence; names that are markup and terminal escapes),
 * opened in headless Chromium (Debian's, installed by the test setup). The rendered DOM must show
 * per sequence a live rate, headroom in minutes, block size, period and owner; the pool's
 * partitions with owner and lag; breaker states; the error codes; the hostile names as text. The
 * screenshot is kept in test-artifacts/status.png. `idd status` must print the same in a terminal
 * (kept in test-artifacts/status.txt).
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import { loadConfig } from "../../src/config/config.js";
import type { StatusSnapshot } from "../../src/ops/status.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { createKafka, type Producer } from "../../src/transport/kafka/index.js";
import { Worker } from "../../src/worker/worker.js";
import { REPO_ROOT } from "../../stack/paths.js";
import { dumpDom, screenshot, visibleText } from "../support/chromium.js";
import { type CliRun, runIdd } from "../support/cli.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { freePort, type PrivateRedis, startPrivateRedis } from "../support/private-redis.js";
import { waitFor } from "../support/wait.js";
import { ownDatabase } from "../support/workers.js";

const base = ownDatabase(inject("services"), "status");
const browser = inject("chromium");
const run = randomUUID().slice(0, 8);
const workerId = `status-${run}`;
const topic = `status.${run}.requests`;
const group = `status-${run}`;
const sequences = [`orders-${run}`, `invoices-${run}`, `tickets-${run}`];
/** Sequence names a client may send (refused: not a valid name) that must reach the page and the terminal as text. */
const markup = `<img src=x onerror="document.title='pwned'">`;
const terminalEscape = "\u001b[31mred-\u001b[0m";
const artifacts = join(REPO_ROOT, "test-artifacts");
const png = join(artifacts, "status.png");

let redis: PrivateRedis;
let worker: Worker;
let client: IdClient;
let producer: Producer;
let url = "";
const store = new Store(base.mongodbUrl);
const queries = new MongoQueries(base.mongodbUrl);
let loading = true;
let load: Promise<void> = Promise.resolve();

beforeAll(async () => {
  redis = await startPrivateRedis();
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  const config = loadConfig(
    {
      IDD_REQUEST_TOPIC: topic,
      IDD_DLQ_TOPIC: `status.${run}.dlq`,
      IDD_GROUP_ID: group,
      IDD_REQUEST_PARTITIONS: "3",
      IDD_WORKER_ID: workerId,
      IDD_HTTP_PORT: String(port),
      // small blocks, so the grants timeline fills within seconds
      IDD_MIN_BLOCK: "20",
      IDD_INITIAL_BLOCK: "50",
      IDD_TARGET_BLOCK_MS: "2000",
    },
    { ...base, redisUrl: redis.url },
  );
  for (const name of sequences) await store.createSequence(defineSequence({ name }, new Date()));
  await store.createSequence(defineSequence({ name: `daily-${run}`, kind: "daily", timeZone: "Asia/Shanghai" }, new Date()));
  worker = await Worker.start({ config, logger: pino({ level: "silent" }) });
  client = await IdClient.connect({ brokers: base.kafkaBrokers, requestTopic: topic, timeoutMs: 30_000 });
  producer = await createKafka({ brokers: base.kafkaBrokers, clientId: `status-test-${run}` }).producer();

  // Load: three loops per sequence, asking for 1-5 numbers at a time, until the tests are done.
  const loop = async (sequence: string, k: number) => {
    for (let i = k; loading; i++) await client.next(sequence, 1 + (i % 5));
  };
  load = Promise.all([...sequences, `daily-${run}`].flatMap((s) => [0, 1, 2].map((k) => loop(s, k)))).then(() => {});
  // The bad requests: an unknown sequence (an error reply), and invalid names without a reply address (dead-lettered).
  await expect(client.next(`nope-${run}`)).rejects.toMatchObject({ code: "UNKNOWN_SEQUENCE" });
  for (const name of [markup, terminalEscape]) {
    await producer.send([
      { topic, key: name, value: Buffer.from(JSON.stringify({ requestId: randomUUID(), sequence: name })), headers: {} },
    ]);
  }
  let s: StatusSnapshot | undefined;
  await waitFor(
    "the load and the bad requests to show",
    async () => {
      s = await status();
      const codes = s.errors.totals.map((t) => t.code);
      return (
        s.sequences.filter((q) => q.ratePerSecond > 0).length >= 4 &&
        codes.includes("UNKNOWN_SEQUENCE") &&
        s.errors.recent.filter((e) => e.code === "NO_REPLY_ADDRESS").length === 2
      );
    },
    { timeoutMs: 30_000, everyMs: 200 },
  ).catch((e: Error) => {
    throw new Error(`${e.message}; the last snapshot: ${JSON.stringify(s)}`);
  });
}, 120_000);

afterAll(async () => {
  loading = false;
  await load.catch(() => {});
  await client?.close();
  await producer?.close();
  await worker?.stop();
  await redis?.stop();
  await queries.dropDatabase();
  await store.close();
});

async function status(): Promise<StatusSnapshot> {
  return (await (await fetch(`${url}/status.json`)).json()) as StatusSnapshot;
}

/** The visible text of each row of a table of the page, by the table's id. */
function rows(dom: string, table: string): string[] {
  const body = new RegExp(`<table id="${table}">[\\s\\S]*?<tbody>([\\s\\S]*?)</tbody>`).exec(dom)?.[1] ?? "";
  return [...body.matchAll(/<tr[^>]*>([\s\S]*?)<\/tr>/g)].map((m) => visibleText(m[1] as string));
}

test("/status in headless Chromium shows live rates, headroom, blocks, owners, pool lag, breakers and errors; user data stays text", async () => {
  if (!browser.path) throw new Error(`no headless browser: ${browser.problem}`);
  const dom = await dumpDom(browser.path, `${url}/status`, { budgetMs: 2500 });

  expect(visibleText(dom)).toContain("live · updated");
  // Refreshed live: within 2.5 s of the page's time it polled /status.json more than once.
  expect(Number(/<body data-updates="(\d+)"/.exec(dom)?.[1])).toBeGreaterThanOrEqual(2);
  const sequenceRows = rows(dom, "sequences");
  for (const name of [...sequences, `daily-${run}`]) {
    const r = sequenceRows.find((t) => t.startsWith(`${name} `));
    expect(r, `a row for ${name} in:\n${sequenceRows.join("\n")}`).toBeDefined();
    // sequence, period, partition, owner, rate, headroom, headroom numbers, block size, in memory, requests,
    // left (of 2^53 - 1) and when it runs out: in years, or not measured over a sample window yet, or the day ends first
    const m =
      /^(\S+) (\S+) (\d) (\S+) ([\d,.]+) \/s ([\d,.]+) min ([\d,]+) ([\d,]+) ([\d,]+) ([\d,]+) [\d,]+ of 9,007,199,254,740,991 to max-value \(100\.0%\) (in [\d.]+ years|measuring|restarts first)$/.exec(
        r as string,
      );
    expect(m, r).not.toBeNull();
    const [, , period, , owner, rate, minutes, , block] = m as RegExpExecArray;
    expect(period).toEqual(name.startsWith("daily-") ? expect.stringMatching(/^\d{8}$/) : "—");
    expect(owner).toBe(workerId);
    expect(Number((rate as string).replaceAll(",", ""))).toBeGreaterThan(0);
    expect(Number((minutes as string).replaceAll(",", ""))).toBeGreaterThan(0);
    expect(Number((block as string).replaceAll(",", ""))).toBeGreaterThanOrEqual(20);
  }

  const poolRows = rows(dom, "pool");
  expect(poolRows).toHaveLength(3);
  for (const [p, r] of poolRows.entries()) expect(r).toMatch(new RegExp(`^${p} ${workerId} [\\d,]+ [\\d,—]+ [\\d,]+$`));
  expect(visibleText(dom)).toContain(`whole group ${group} (Stable, 1 member) on ${topic}`);

  expect(rows(dom, "breakers")).toEqual([
    expect.stringMatching(/^redis closed answers since start$/),
    expect.stringMatching(/^mongodb closed answers since start$/),
  ]);
  const errors = rows(dom, "errors");
  expect(errors.some((r) => /UNKNOWN_SEQUENCE nope-/.test(r))).toBe(true);
  // The markup arrives as text: shown literally, no element made of it, its handler never ran.
  expect(errors.some((r) => r.includes(`NO_REPLY_ADDRESS ${markup} 1`))).toBe(true);
  expect(dom).not.toMatch(/<img/i);
  expect(dom).toContain("<title>idd status</title>");
  expect(visibleText(dom)).toMatch(/NO_REPLY_ADDRESS × 2/);
  // The same refusals in /metrics, by code only (the names they brought are untrusted).
  const metrics = await (await fetch(`${url}/metrics`)).text();
  expect(metrics).toMatch(/^idd_requests_refused_total\{code="NO_REPLY_ADDRESS"\} 2$/m);
  expect(metrics).not.toContain("<img");

  // Grants: a lane per sequence in the timeline, and the latest claims listed.
  for (const name of sequences) expect(dom).toContain(`<div class="label">${name}</div>`);
  expect(rows(dom, "grants")[0]).toMatch(/ago \S+ \S+ [\d,]+ [\d,]+ [\d,]+$/);

  rmSync(png, { force: true });
  mkdirSync(artifacts, { recursive: true });
  await screenshot(browser.path, `${url}/status`, png, { budgetMs: 2500, width: 1400, height: 1000 });
  const image = readFileSync(png);
  expect(image.subarray(1, 4).toString()).toBe("PNG");
  expect([image.readUInt32BE(16), image.readUInt32BE(20)]).toEqual([1400, 1000]); // IHDR: width, height
  expect(statSync(png).size).toBeGreaterThan(30_000); // a blank page compresses to a few KiB
  process.stdout.write(`status page screenshot: ${png}\n`);
}, 90_000);

/** Runs `idd …` as an operator would, with the test's request topic and group. */
function idd(args: string[]): Promise<CliRun> {
  return runIdd(args, {
    KAFKA_BROKERS: base.kafkaBrokers.join(","),
    REDIS_URL: redis.url,
    MONGODB_URL: base.mongodbUrl,
    SCHEMA_REGISTRY_URL: base.schemaRegistryUrl,
    IDD_REQUEST_TOPIC: topic,
    IDD_GROUP_ID: group,
  });
}

test("idd status prints the same in a terminal: per sequence rate and headroom, the pool, errors; no terminal escapes", async () => {
  const r = await idd(["status", "--url", url]);
  expect(r.status, r.stderr).toBe(0);
  mkdirSync(artifacts, { recursive: true });
  writeFileSync(join(artifacts, "status.txt"), r.stdout); // what the operator saw, kept beside the screenshot
  const lines = r.stdout.split("\n");
  // Its clients partition like Java's (murmur2): every request lands home, none is forwarded.
  expect(lines[0]).toMatch(
    new RegExp(`^worker ${workerId} \\(${url}\\): ready, partitions 0,1,2 of 3, 0 requests forwarded home, up \\d+s$`),
  );
  for (const name of sequences) {
    const row = lines.find((l) => l.trim().startsWith(`${name} `));
    // SEQUENCE PERIOD PARTITION OWNER RATE HEADROOM HEADROOM-NUMBERS BLOCK IN-MEMORY REQUESTS LEFT RUNS-OUT
    expect(row, r.stdout).toMatch(
      new RegExp(
        `^  ${name} +- +\\d +${workerId} +[\\d,.]+/s +[\\d,.]+ min +[\\d,]+ +[\\d,]+ +[\\d,]+ +[\\d,]+ +[\\d,]+ of 9,007,199,254,740,991 to max-value \\(100\\.0%\\) +(in [\\d.]+ years|measuring)$`,
      ),
    );
    expect(Number(/ ([\d,.]+)\/s/.exec(row as string)?.[1]?.replaceAll(",", ""))).toBeGreaterThan(0);
  }
  expect(r.stdout).toContain("breakers: redis closed, answers; mongodb closed, answers");
  expect(r.stdout).toMatch(/errors since start: .*NO_REPLY_ADDRESS x2/);
  expect(r.stdout).toContain(`NO_REPLY_ADDRESS  ${markup}  x1`);
  expect(r.stdout).toContain("?[31mred-?[0m"); // the escape sequence, defused
  expect(r.stdout).not.toContain("\u001b");
  expect(r.stdout).toContain(`pool: group ${group} on ${topic}, Stable, 1 member (from the broker, via ${url})`);
  for (const p of [0, 1, 2]) expect(r.stdout).toMatch(new RegExp(`^ +${p}  ${workerId} +[\\d,]+ +[\\d,-]+ +[\\d,]+$`, "m"));

  // Without --url: the pool only, straight from the broker, and a hint where the rest lives.
  const pool = await idd(["status"]);
  expect(pool.status, pool.stderr).toBe(0);
  expect(pool.stdout).toMatch(new RegExp(`^pool: group ${group} on ${topic}, Stable, 1 member \\(from the broker\\)$`, "m"));
  for (const p of [0, 1, 2]) expect(pool.stdout).toMatch(new RegExp(`^ +${p}  ${workerId} `, "m"));
  expect(pool.stderr).toContain("idd status --url");

  // A worker that does not answer: one coded line, exit 1.
  const down = await idd(["status", "--url", "http://127.0.0.1:1"]);
  expect(down.status).toBe(1);
  expect(down.stderr).toMatch(/STATUS_UNAVAILABLE.*127\.0\.0\.1:1/);
}, 60_000);
