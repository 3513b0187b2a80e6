/**
 * The `idd` CLI as a user meets it, run as a process against the real services: `idd seq` defines,
 * lists, shows and updates sequences and fails with one coded line on bad input; `idd replay`
 * rebuilds a Redis that lost everything (dry run first) and keeps the exit codes its help promises.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { counterKey } from "../../src/redis/keys.js";
import { defineScripts } from "../../src/redis/scripts.js";
import { checkAlgorithm } from "../../src/sequences/check-digits.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { testAllocator } from "../support/allocator.js";
import { type CliRun, runIdd } from "../support/cli.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { type PrivateRedis, startPrivateRedis } from "../support/private-redis.js";
import { ownDatabase, startWorker, stopWorker } from "../support/workers.js";

const services = ownDatabase(inject("services"), "cli");
const { mongodbUrl } = services;
const store = new Store(mongodbUrl);
const queries = new MongoQueries(mongodbUrl);
let server: PrivateRedis;
let redis: Redis;

beforeAll(async () => {
  server = await startPrivateRedis();
  redis = defineScripts(new Redis(server.url));
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
  await queries.dropDatabase();
  await store.close();
});

/** Runs `idd …` with the test's services (a private Redis, a database of its own). */
function idd(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  return runIdd(args, {
    KAFKA_BROKERS: services.kafkaBrokers.join(","),
    REDIS_URL: server.url,
    MONGODB_URL: mongodbUrl,
    SCHEMA_REGISTRY_URL: services.schemaRegistryUrl,
    IDD_LOG_LEVEL: "error",
    ...env,
  });
}

test("idd seq: create, list, show, update; bad input fails with exit 2 and one coded line per problem", async () => {
  const name = `cli-${randomUUID().slice(0, 8)}`;
  const created = await idd(["seq", "create", name, "--kind", "daily", "--start", "100", "--time-zone", "Asia/Shanghai"]);
  expect(created.status).toBe(0);
  expect(created.stdout).toMatch(new RegExp(`^${name}\\tkind=daily start=100 .*time-zone=Asia/Shanghai period=daily grant-log=relaxed`));

  const again = await idd(["seq", "create", name]);
  expect(again.status).toBe(2);
  expect(again.stderr).toContain(`SEQUENCE_EXISTS: sequence "${name}" exists already`);

  const invalid = await idd(["seq", "create", "bad name!", "--kind", "weekly", "--start", "x"]);
  expect(invalid.status).toBe(2);
  const problems = invalid.stderr.split("\n").filter((l) => l.startsWith("idd: SEQUENCE_INVALID: "));
  expect(problems.length).toBeGreaterThanOrEqual(3); // name, kind and start, all at once

  const updated = await idd(["seq", "update", name, "--grant-log", "strict", "--max-value", "99999"]);
  expect(updated.status).toBe(0);
  const shown = await idd(["seq", "show", name]);
  expect(shown.status).toBe(0);
  expect(shown.stdout).toMatch(/kind=daily start=100 max-value=99999 .*grant-log=strict/);
  expect(shown.stderr).toContain("no numbers reserved yet");

  const list = await idd(["seq", "list"]);
  expect(list.stdout.split("\n").filter((l) => l.startsWith(`${name}\t`))).toHaveLength(1);

  // Gapless: given at creation with its timeout; the timeout can change, gapless cannot.
  const gapless = await idd(["seq", "create", `${name}-g`, "--gapless", "--confirm-timeout", "90s"]);
  expect(gapless.stdout).toMatch(new RegExp(`^${name}-g\tkind=monotonic .* gapless confirm-timeout=90000ms`));
  expect((await idd(["seq", "update", `${name}-g`, "--confirm-timeout", "1h"])).stdout).toContain("confirm-timeout=3600000ms");
  const switched = await idd(["seq", "update", name, "--gapless"]);
  expect([switched.status, switched.stderr]).toEqual([2, expect.stringContaining("SEQUENCE_INVALID: gapless cannot be switched on")]);
  const snow = await idd(["seq", "create", `${name}-s`, "--kind", "snowflake", "--gapless"]);
  expect([snow.status, snow.stderr]).toEqual([2, expect.stringContaining("gapless does not apply to snowflake sequences")]);

  for (const args of [
    ["seq", "show", "nope"],
    ["seq", "update", "nope", "--max-value", "5"],
  ]) {
    const r = await idd(args);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('UNKNOWN_SEQUENCE: no sequence named "nope"');
  }
}, 120_000);

test("idd seq create --from: 5,000 definitions of a CSV in one command, with progress; names defined already are left as they are; one bad line refuses the file", async () => {
  const run = randomUUID().slice(0, 8);
  const names = Array.from({ length: 5000 }, (_, i) => `tenant-${run}-${i}`);
  const existing = names[7] as string;
  await store.createSequence(defineSequence({ name: existing, start: 42 }, new Date()));
  const dir = mkdtempSync(join(tmpdir(), "idd-seq-file-"));
  try {
    const file = join(dir, "tenants.csv");
    writeFileSync(file, `name,start\n${names.map((n) => `${n},100`).join("\n")}\n`);
    const r = await idd(["seq", "create", "--from", file, "--kind", "daily", "--time-zone", "Asia/Shanghai"]);
    expect(r.stderr).toContain(`${file}: 5000 sequence definitions checked`);
    expect(r.stderr).toMatch(/created 5000 of 5000 \(\d+\/s\)/);
    expect(r.stderr).toContain(`1 defined already, left as they are: ${existing}`);
    expect(r.stdout).toBe("created 4999 sequences; 1 defined already\n");
    expect(r.status).toBe(0);
    const defined = (await store.listSequences()).filter((d) => d.name.startsWith(`tenant-${run}-`));
    expect(defined.length).toBe(5000);
    const wrong = defined.filter((d) =>
      d.name === existing
        ? d.kind !== "monotonic" || d.start !== 42n
        : d.kind !== "daily" || d.start !== 100n || d.timeZone !== "Asia/Shanghai",
    );
    expect(wrong.map((d) => d.name)).toEqual([]);

    const bad = join(dir, "bad.jsonl");
    writeFileSync(bad, `{"name":"ok-${run}"}\n{"name":"bad name"}\n`);
    const refused = await idd(["seq", "create", "--from", bad]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain(`idd: SEQUENCE_INVALID: ${bad}: 1 of 2 lines are not sequence definitions; nothing was created:`);
    expect(refused.stderr).toContain('line 2 ("bad name"): name must be 1-64 characters');
    expect(await store.getSequence(`ok-${run}`)).toBeUndefined();

    const both = await idd(["seq", "create", "x", "--from", bad]);
    expect(both.status).toBe(2);
    expect(both.stderr).toContain("give a name or --from <file>, not both");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);

test("idd replay: --dry-run changes nothing; replay rebuilds an emptied Redis above every issued number; exit 2 when it cannot run", async () => {
  const name = `cli-${randomUUID().slice(0, 8)}`;
  expect((await idd(["seq", "create", name, "--start", "1000"])).status).toBe(0);
  const def = await store.getSequence(name);
  if (!def) throw new Error("sequence not created");
  const a = testAllocator({
    redis,
    store,
    worker: "w1",
    flushMs: 10,
    config: {
      minBlock: 10,
      maxBlock: 100,
      initialBlock: 20,
      targetBlockMs: 1000,
      prefetchAt: 0.5,
      reserveLowMs: 1000,
      reserveAheadMs: 1000,
      minReservation: 300,
    },
  });
  let highest = 0n;
  for (let i = 0; i < 30; i++) for (const r of await a.counter(def, null).take(9)) highest = r.last;
  await a.close();
  expect(highest).toBe(1269n);
  const reserved = (await idd(["seq", "show", name])).stdout.match(/period=- reserved-max=(\d+) epoch=1/);
  expect(BigInt(reserved?.[1] ?? "0")).toBeGreaterThanOrEqual(highest);

  await server.restartEmpty();
  const dry = await idd(["replay", "--dry-run", "--settle-ms", "1"]);
  expect(dry.status).toBe(0);
  expect(dry.stdout).toMatch(new RegExp(`${counterKey(name, null)}\\tcreate\\tabsent -> cur=\\d+ max=\\d+`));
  expect(dry.stderr).toContain("dry run, nothing changed");
  expect(await redis.dbsize()).toBe(0);

  const run = await idd(["replay", "--settle-ms", "1"]);
  expect(run.status).toBe(0);
  const cur = BigInt((await redis.hget(counterKey(name, null), "cur")) ?? "0");
  expect(cur).toBeGreaterThanOrEqual(highest);

  const again = await idd(["replay", "--settle-ms", "1"]);
  expect(again.status).toBe(0);
  expect(BigInt((await redis.hget(counterKey(name, null), "cur")) ?? "0")).toBe(cur); // idempotent

  const unreachable = await idd(["replay"], { REDIS_URL: "redis://127.0.0.1:1" });
  expect(unreachable.status).toBe(2);
  expect(unreachable.stderr.trim().split("\n").at(-1)).toMatch(/^idd: /);

  const help = await idd(["replay", "--help"]);
  expect(help.stdout).toContain("Exit codes: 0 done");
}, 120_000);

test("idd seq create --kind obfuscated and idd decode: values back to their serials with the keys; without them, a coded line", async () => {
  const name = `cli-obf-${randomUUID().slice(0, 8)}`;
  const key = Buffer.alloc(32, 7).toString("base64");
  const created = await idd(["seq", "create", name, "--kind", "obfuscated", "--digits", "9", "--key-version", "3"]);
  expect(created.stdout).toMatch(new RegExp(`^${name}\\tkind=obfuscated start=1 max-value=99999999 .*digits=9 key-version=3`));
  const { parseObfuscationKeys } = await import("../../src/sequences/obfuscation/keys.js");
  const domain = parseObfuscationKeys(`3:${key}`, "test").domain({ sequence: name, digits: 9, currentVersion: 3 });
  const [a, b] = domain.encodeAll([1n, 42n]) as [string, string];
  const decoded = await idd(["decode", name, a, b], { IDD_OBFUSCATION_KEYS: `3:${key}` });
  expect(decoded.stdout).toBe(`${a}\tserial=1 key-version=3\n${b}\tserial=42 key-version=3\n`);
  expect(decoded.stdout + decoded.stderr).not.toContain(key); // keys never printed
  const keyless = await idd(["decode", name, a], { IDD_OBFUSCATION_KEYS: "", IDD_OBFUSCATION_KEYS_FILE: "" });
  expect(keyless.status).toBe(2);
  expect(keyless.stderr).toMatch(/OBFUSCATION_KEY_MISSING: set IDD_OBFUSCATION_KEYS/);
  // A formatted sequence printing {obf:N}: decode reads the value, then the serial inside it.
  const fmt = await idd(["seq", "create", `${name}-f`, "--kind", "formatted", "--format", "Q{obf:10}{check:luhn}", "--key-version", "3"]);
  expect(fmt.stdout).toMatch(/kind=formatted start=1 max-value=999999999 .*digits=10 key-version=3/);
  const [obf] = parseObfuscationKeys(`3:${key}`, "test")
    .domain({ sequence: `${name}-f`, digits: 10, currentVersion: 3 }) // no dates printed: the name alone is the tweak
    .encodeAll([7n]) as [string];
  const value = `Q${obf}${checkAlgorithm("luhn").compute(obf)}`;
  const read = await idd(["decode", `${name}-f`, value], { IDD_OBFUSCATION_KEYS: `3:${key}` });
  expect(read.stdout).toBe(`${value}\tserial=7 key-version=3\n`);
  const typo = await idd(["decode", `${name}-f`, `Q${obf}${(Number(checkAlgorithm("luhn").compute(obf)) + 1) % 10}`], {
    IDD_OBFUSCATION_KEYS: `3:${key}`,
  });
  expect(typo.status).toBe(2);
  expect(typo.stderr).toMatch(/OBFUSCATED_VALUE_INVALID: "Q\d+" is not a value of sequence/);
  const bad = await idd(["seq", "create", `${name}-x`, "--kind", "obfuscated", "--digits", "5", "--key-version", "0"]);
  expect(bad.status).toBe(2);
  expect(bad.stderr).toMatch(/digits must be a whole number from 7 to 18[\s\S]*keyVersion must be a whole number from 1 to 9/);
}, 60_000);

test("idd seq create --kind snowflake shows when the layout runs out; idd decode prints an id's time, worker and sequence", async () => {
  const name = `cli-snow-${randomUUID().slice(0, 8)}`;
  const created = await idd(["seq", "create", name, "--kind", "snowflake", "--layout", "epoch=2026-01-01T00:00:00Z"]);
  expect(created.status).toBe(0);
  expect(created.stdout).toMatch(
    /layout=epoch=2026-01-01T00:00:00.000Z,unitMs=1,timeBits=41,workerBits=10,seqBits=12 runs-out=2095-09-07T15:47:35.552Z /,
  );
  const { compose } = await import("../../src/sequences/snowflake-layout.js");
  const id = compose(
    { epochMs: Date.parse("2026-01-01T00:00:00Z"), unitMs: 1, timeBits: 41, workerBits: 10, seqBits: 12 },
    {
      time: new Date("2026-11-23T10:00:00.123Z"),
      worker: 7,
      seq: 42,
    },
  );
  const decoded = await idd(["decode", name, id.toString()]);
  expect(decoded.stdout).toBe(`${id}\ttime=2026-11-23T10:00:00.123Z worker=7 seq=42\n`);
  const bad = await idd(["seq", "create", `${name}-x`, "--kind", "snowflake", "--layout", "timeBits=60"]);
  expect(bad.status).toBe(2);
  expect(bad.stderr).toMatch(/SEQUENCE_INVALID: layout: timeBits \+ workerBits \+ seqBits is 82/);
}, 60_000);

test("idd next prints what the sequence issues (formatted values), takes --field, and --json prints whole replies", async () => {
  const run = randomUUID().slice(0, 8);
  const topics = {
    IDD_REQUEST_TOPIC: `cli.${run}.requests`,
    IDD_DLQ_TOPIC: `cli.${run}.dlq`,
    IDD_GROUP_ID: `cli-${run}`,
    IDD_REQUEST_PARTITIONS: "1",
  };
  const inv = `cli-inv-${run}`;
  const area = `cli-area-${run}`;
  const plain = `cli-plain-${run}`;
  expect((await idd(["seq", "create", inv, "--kind", "formatted", "--format", "INV-{yy}{MM}-{seq:6}{check:damm}"])).status).toBe(0);
  expect((await idd(["seq", "create", area, "--kind", "formatted", "--format", "{field:area:3}-{seq:5}{check:luhn}"])).status).toBe(0);
  expect((await idd(["seq", "create", plain, "--start", "1000"])).status).toBe(0);
  const worker = startWorker(`cli-${run}`, {
    KAFKA_BROKERS: services.kafkaBrokers.join(","),
    REDIS_URL: server.url,
    MONGODB_URL: mongodbUrl,
    SCHEMA_REGISTRY_URL: services.schemaRegistryUrl,
    ...topics,
  });
  try {
    await worker.assigned;
    const next = (args: string[]) => idd(["next", ...args], topics);
    const yymm = new Date().toISOString().slice(2, 7).replace("-", "");
    const formatted = await next([inv, "--count", "2"]);
    expect(formatted.stderr).toContain(`period 20${yymm}`);
    const damm = (v: string) => `${v}${checkAlgorithm("damm").compute(v.replace(/\D/g, ""))}`;
    expect(formatted.stdout).toBe(`${damm(`INV-${yymm}-000001`)}\n${damm(`INV-${yymm}-000002`)}\n`);
    for (const v of formatted.stdout.trim().split("\n")) expect((await idd(["check", v, "--algorithm", "damm"])).stdout).toBe("valid\n");

    const fields = await next([area, "--field", "area=010", "--count", "2"]);
    expect(fields.stdout).toBe(
      `010-00001${checkAlgorithm("luhn").compute("01000001")}\n010-00002${checkAlgorithm("luhn").compute("01000002")}\n`,
    );
    const numbers = await next([plain, "--count", "3"]);
    expect([numbers.status, numbers.stdout]).toEqual([0, "1000\n1001\n1002\n"]);

    const json = await next([area, "--field", "area=7", "--count", "2", "--json"]);
    expect(json.status).toBe(0);
    expect(json.stdout.trim().split("\n")).toHaveLength(1);
    const reply = JSON.parse(json.stdout);
    expect(reply).toMatchObject({
      sequence: area,
      period: null,
      status: "OK",
      ranges: [{ first: "3", last: "4" }],
      formatted: [`7-00003${checkAlgorithm("luhn").compute("700003")}`, `7-00004${checkAlgorithm("luhn").compute("700004")}`],
      formattedOmitted: false,
      error: null,
    });
    expect(reply.issuedAt).toMatch(/^\d{13}$/);
    expect(reply.requestId).toMatch(/^[0-9a-f-]{36}$/);

    const refused = await next([area, "--json"]); // no --field: an error reply, printed whole
    expect(refused.status).toBe(2);
    expect(JSON.parse(refused.stdout)).toMatchObject({ status: "ERROR", ranges: [], error: { code: "BAD_FIELDS" } });
    expect(refused.stderr).toContain("BAD_FIELDS");
    const plainRefused = await next([area, "--field", "area=0", "--field", "shop=1"]);
    expect(plainRefused.status).toBe(2);
    expect(plainRefused.stderr).toMatch(/idd: BAD_FIELDS: .*unknown field "shop"/);
    const usage = await next([area, "--field", "area"]);
    expect(usage.status).not.toBe(0);
    expect(usage.stderr).toContain("write name=value");
    const help = await idd(["next", "--help"]);
    expect(help.stdout).toMatch(/--field <name=value>[\s\S]*--json[\s\S]*formatted values/);
  } finally {
    await stopWorker(worker);
  }
}, 180_000);
