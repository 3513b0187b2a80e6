/**
 * The product's core promise on the real stack: 3 worker processes, 23 sequences (monotonic,
 * daily, and formatted ones restarting daily, monthly and never), several concurrent clients,
 * ≥ 50,000 numbers in single and batch requests, while a fourth worker joins and one leaves. Every
 * number is collected and checked: no duplicate per (sequence, period); causal order per
 * (sequence, period); every formatted value unique per sequence, matching its template, carrying
 * its number, with a valid check digit. The workers' /metrics, scraped, add up to exactly the numbers
 * the clients received per sequence (the leaver is scraped in a lull just before it leaves; the
 * joiner joins under load).
 */
import { randomUUID } from "node:crypto";
import { afterAll, expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import { checkAlgorithm } from "../../src/sequences/check-digits.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { checkHistory, type Issued } from "../support/history.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { freePort } from "../support/private-redis.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker, type WorkerProcess } from "../support/workers.js";

const services = ownDatabase(inject("services"), "pool");
const run = randomUUID().slice(0, 8);
const env = {
  ...serviceEnv(services),
  IDD_REQUEST_TOPIC: `pool.${run}.requests`,
  IDD_DLQ_TOPIC: `pool.${run}.dlq`,
  IDD_GROUP_ID: `pool-${run}`,
  IDD_REQUEST_PARTITIONS: "12",
  IDD_MIN_BLOCK: "20",
  IDD_INITIAL_BLOCK: "50",
  IDD_TARGET_BLOCK_MS: "2000",
  IDD_MIN_RESERVATION: "500",
};
const workers: WorkerProcess[] = [];
const clients: IdClient[] = [];
const store = new Store(services.mongodbUrl);
const queries = new MongoQueries(services.mongodbUrl);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(workers.map((w) => stopWorker(w, "SIGKILL")));
  await queries.dropDatabase();
  await store.close();
});

test("a worker pool with one joining and one leaving issues ≥ 50,000 numbers: no duplicate, causal order kept", async () => {
  const names = Array.from({ length: 20 }, (_, i) => `pool-${run}-${i < 10 ? "m" : "d"}${i}`);
  const zones = ["Asia/Shanghai", "America/New_York", "Europe/Moscow", "UTC", "Asia/Kolkata"];
  for (const [i, name] of names.entries()) {
    const daily = i >= 10;
    await store.createSequence(
      defineSequence(
        { name, kind: daily ? "daily" : "monotonic", start: i % 2 ? 1_000_000 : 1, ...(daily && { timeZone: zones[i % zones.length] }) },
        new Date(),
      ),
    );
  }
  /** Formatted sequences: template, what a value must look like (serial in group 1, check in group 2), the check. */
  const formats = [
    { format: "{yyyy}{MM}{dd}{seq:6}{check:damm}", shape: /^\d{8}(\d{6})(\d)$/, check: "damm", fields: undefined },
    {
      format: "{field:area:3}-{yy}{MM}-{seq:7}{check:verhoeff}",
      shape: /^010-\d{4}-(\d{7})(\d)$/,
      check: "verhoeff",
      fields: { area: "010" },
    },
    { format: "QJ{seq:8}{check:mod97-10}", shape: /^QJ(\d{8})(\d\d)$/, check: "mod97-10", fields: undefined },
  ] as const;
  const formatted = formats.map((f, i) => ({ ...f, name: `pool-${run}-f${i}` }));
  for (const f of formatted) {
    const def = defineSequence({ name: f.name, kind: "formatted", format: f.format, timeZone: "Asia/Shanghai" }, new Date());
    await store.createSequence(def);
  }
  expect((await store.listSequences()).filter((d) => d.kind === "formatted").map((d) => d.period)).toEqual(["daily", "monthly", "never"]);
  names.push(...formatted.map((f) => f.name));
  const values = new Map<string, string[]>(formatted.map((f) => [f.name, []]));
  const badValues: string[] = [];

  const ports = new Map<WorkerProcess, number>();
  const start = async (id: string) => {
    const port = await freePort();
    const w = startWorker(id, { ...env, IDD_HTTP_PORT: String(port) });
    ports.set(w, port);
    workers.push(w);
    return w;
  };
  /** numbers_total per sequence of one worker's /metrics. */
  const scrape = async (w: WorkerProcess): Promise<Map<string, number>> => {
    const text = await (await fetch(`http://127.0.0.1:${ports.get(w)}/metrics`)).text();
    const out = new Map<string, number>();
    for (const m of text.matchAll(/^idd_numbers_total\{sequence="([^"]+)"\} (\d+)$/gm)) out.set(m[1] as string, Number(m[2]));
    return out;
  };
  for (let i = 1; i <= 3; i++) await start(`w${i}`);
  await Promise.all(workers.map((w) => w.assigned));

  for (let i = 0; i < 4; i++)
    clients.push(await IdClient.connect({ brokers: services.kafkaBrokers, requestTopic: env.IDD_REQUEST_TOPIC, timeoutMs: 60_000 }));

  const target = 50_000;
  const history: Issued[] = [];
  const failures: string[] = [];
  let requested = 0;
  const giveUpAt = performance.now() + 240_000;
  let joined = false;
  let joinerWorking = false; // the joiner was given partitions
  let left = false;
  let leaverGone = false;
  let inFlight = 0;
  let lull: Promise<void> | undefined;
  let leaverCounts = new Map<string, number>();
  const gotWork = (l: string) => l.includes('"msg":"partitions assigned"') && /"partitions":\[\d/.test(l);
  let seed = 42;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };

  async function loop(client: IdClient): Promise<void> {
    // Load goes on until the target is met and both rebalances happened (on a loaded machine the
    // joiner can take longer to start than the target takes to issue).
    while ((requested < target || !leaverGone) && performance.now() < giveUpAt) {
      if (lull) await lull;
      const sequence = names[Math.floor(random() * names.length)] as string;
      const count = random() < 0.6 ? 1 : 2 + Math.floor(random() * 60);
      requested += count;
      if (!joined && requested > target * 0.3) {
        joined = true;
        void (async () => {
          const w4 = await start("w4"); // scale out, under load
          while (!w4.log.some(gotWork) && performance.now() < giveUpAt) await new Promise((r) => setTimeout(r, 100));
          joinerWorking = true;
        })();
      }
      if (!left && joinerWorking && requested > target * 0.6) {
        left = true;
        // Scale in, after a lull in which the leaver's metrics are scraped: what it counted leaves with it.
        lull = (async () => {
          while (inFlight > 0) await new Promise((r) => setTimeout(r, 10));
          leaverCounts = await scrape(workers[0] as WorkerProcess);
          await stopWorker(workers[0] as WorkerProcess, "SIGTERM");
          leaverGone = true;
          lull = undefined;
        })();
        await lull;
      }
      const sentAt = performance.now();
      inFlight++;
      try {
        const f = formatted.find((x) => x.name === sequence);
        const r = await client.next(sequence, count, { ...(f?.fields && { fields: f.fields }) });
        history.push({ sequence, period: r.period, ranges: r.ranges, sentAt, receivedAt: performance.now() });
        const n = r.ranges.reduce((s, x) => s + Number(x.last - x.first + 1n), 0);
        if (n !== count) failures.push(`${sequence}: asked ${count}, got ${n}`);
        if (f) {
          values.get(sequence)?.push(...r.formatted);
          if (r.formatted.length !== count) badValues.push(`${sequence}: ${count} numbers, ${r.formatted.length} values`);
          r.formatted.forEach((v, k) => {
            const m = f.shape.exec(v);
            const ok = m && BigInt(m[1] as string) === r.numbers[k] && checkAlgorithm(f.check).validate(v.replace(/\D/g, ""));
            if (!ok) badValues.push(`${sequence}: "${v}" for ${r.numbers[k]}`);
          });
        } else if (r.formatted.length > 0) badValues.push(`${sequence}: unformatted, got ${r.formatted[0]}`);
      } catch (e) {
        failures.push(`${sequence}: ${(e as Error).message}`);
      } finally {
        inFlight--;
      }
    }
  }
  await Promise.all(clients.flatMap((c) => Array.from({ length: 4 }, () => loop(c))));

  const report = checkHistory(history);
  process.stderr.write(`pool: ${history.length} requests, ${report.numbers} numbers, ${failures.length} failures\n`);
  expect(failures).toEqual([]);
  expect(report.duplicates).toEqual([]);
  expect(report.orderViolations).toEqual([]);
  expect(report.numbers).toBeGreaterThanOrEqual(target);
  expect(new Set(history.map((h) => h.sequence)).size).toBe(names.length);
  expect(badValues).toEqual([]);
  for (const [sequence, all] of values) {
    expect(all.length, sequence).toBeGreaterThan(0);
    expect(new Set(all).size, `${sequence}: every value unique`).toBe(all.length);
  }
  expect(history.some((h) => h.period !== null) && history.some((h) => h.period === null)).toBe(true);
  expect(leaverGone).toBe(true);
  expect(await (workers[0] as WorkerProcess).exited).toBe(0); // left cleanly on SIGTERM
  expect((workers[3] as WorkerProcess).log.some(gotWork)).toBe(true); // the worker that joined was given partitions

  // Metrics: the leaver's last scrape plus the others' now add up to what the clients received, exactly.
  const received = new Map<string, number>();
  for (const h of history)
    received.set(h.sequence, (received.get(h.sequence) ?? 0) + h.ranges.reduce((n, x) => n + Number(x.last - x.first + 1n), 0));
  const scraped = new Map<string, number>(leaverCounts);
  for (const w of workers.slice(1)) for (const [s, n] of await scrape(w)) scraped.set(s, (scraped.get(s) ?? 0) + n);
  expect(leaverCounts.size).toBeGreaterThan(0);
  expect(Object.fromEntries([...scraped].sort())).toEqual(Object.fromEntries([...received].sort()));
}, 300_000);
