#!/usr/bin/env node
/** The `idd` command: worker, sequences, numbers. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Command, InvalidArgumentError } from "commander";
import { IdClient } from "../client/id-client.js";
import { type Config, ENV, HTTP_TOKEN_ENV, loadConfig } from "../config/config.js";
import { secretFromEnv } from "../config/secret.js";
import { fromVars, SERVICE_VARS, type ServiceSettings, serviceSettings } from "../config/services.js";
import { errorLines, IddError } from "../errors.js";
import { createLogger } from "../log.js";
import { poolStatus } from "../ops/status.js";
import { readStatus } from "../ops/status-client.js";
import { poolLines, statusText } from "../ops/status-text.js";
import { PACKAGE_ROOT } from "../package-root.js";
import type { IdReply } from "../protocol/reply.js";
import { replay } from "../recovery/replay.js";
import { createRedis, redisConnected } from "../redis/client.js";
import { CHECK_ALGORITHMS, checkAlgorithm, typedValueDigits } from "../sequences/check-digits.js";
import { decodedText, decodeValue } from "../sequences/decode.js";
import { defineSequence, GRANT_LOG_MODES, type SequenceDef } from "../sequences/definition.js";
import { KIND_NAMES, KINDS } from "../sequences/kinds/table.js";
import { keySourceFromEnv, loadObfuscationKeys, type ObfuscationKeys } from "../sequences/obfuscation/keys.js";
import { PERIODS } from "../sequences/period.js";
import { decompose, runsOutAt } from "../snowflake/layout.js";
import { Store } from "../storage/store.js";
import { createKafka } from "../transport/kafka.js";
import { Worker } from "../worker/worker.js";

const say = (line: string) => process.stderr.write(`idd: ${line}\n`);
const { version } = JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string };

/** The configured services; with none configured, the local stack (brought up when `startStack`). */
async function services(startStack: boolean): Promise<ServiceSettings> {
  const configured = serviceSettings({ ...process.env, IDD_STACK_DIR: "/nonexistent-idd-stack" });
  if (configured) return configured;
  if (!startStack) {
    const fromStack = serviceSettings();
    if (fromStack) return fromStack;
    throw new Error(`no services configured: set ${SERVICE_VARS.join(", ")}, or run \`npm run stack -- up\` (or \`npm start\`)`);
  }
  say("no services configured: bringing up the local stack (npm run stack -- up)");
  const { up } = await import("../../stack/stack.js"); // development tooling, loaded only when needed
  const r = await up({ progress: (l) => say(`stack: ${l}`) });
  return fromVars(r.env, "local stack");
}

async function config(startStack = false): Promise<Config> {
  const s = await services(startStack);
  // The local stack's Redis keeps no data across restarts: `idd start` rebuilds it unless told not to.
  const env = startStack && s.source === "local stack" ? { [ENV.replayOnStart]: "true", ...process.env } : process.env;
  return loadConfig(env, s);
}

async function runWorker(c: Config): Promise<void> {
  const logger = createLogger(c.logLevel, { worker: c.workerId });
  const worker = new Worker({ config: c, logger });
  logger.info({ services: c.services.source }, "configuration valid");
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "stopping: finishing the batch in flight");
    worker.stop().then(
      () => process.exit(0),
      (e: unknown) => {
        logger.error({ err: (e as Error).message }, "stop failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  await worker.start();
}

async function withStore<T>(f: (s: Store) => Promise<T>): Promise<T> {
  const c = await config();
  const store = new Store(c.services.mongodbUrl);
  try {
    return await f(store);
  } finally {
    await store.close();
  }
}

function show(d: SequenceDef): string {
  const zone = d.timeZone ? ` time-zone=${d.timeZone}` : "";
  const period = d.period !== "never" ? ` period=${d.period}` : "";
  const format = d.format !== null ? ` format=${JSON.stringify(d.format)} overflow=${d.overflow}` : "";
  const obf = d.obfuscation ? ` digits=${d.obfuscation.digits} key-version=${d.obfuscation.keyVersion}` : "";
  const l = d.snowflake;
  const snow = l
    ? ` layout=epoch=${new Date(l.epochMs).toISOString()},unitMs=${l.unitMs},timeBits=${l.timeBits},workerBits=${l.workerBits},seqBits=${l.seqBits} runs-out=${runsOutAt(l).toISOString()}`
    : "";
  return `${d.name}\tkind=${d.kind} start=${d.start} max-value=${d.maxValue}${zone}${period}${format}${obf}${snow} grant-log=${d.grantLog} created=${d.createdAt.toISOString()}`;
}

const GRANT_LOG_HELP = `${GRANT_LOG_MODES.join(" or ")}: strict appends each block to MongoDB before using it (replay restores to the last grant, gap ≈ 0; claims stop while MongoDB is down); relaxed appends in batches (replay restores to the reservation)`;

/** What `idd seq create/update` take, as commander hands them over. */
interface SeqOptions {
  maxValue?: string;
  timeZone?: string;
  format?: string;
  period?: string;
  overflow?: string;
  digits?: string;
  keyVersion?: string;
  layout?: string;
  grantLog?: string;
}

const positive = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("must be a positive integer");
  return n;
};

const program = new Command("idd")
  .version(version)
  .description("idd, the Kafka ID dispenser: unique, ordered sequence numbers over Kafka")
  .addHelpText(
    "after",
    `
Services: set all of ${SERVICE_VARS.join(", ")} to use your own;
set none and idd uses the local stack (\`npm run stack -- up\`; \`idd start\` starts it when needed).
Settings: ${Object.values(ENV).join(", ")} (see README).
`,
  );

program
  .command("start")
  .description("run a worker against the configured services, or against the local stack (started when needed) when none are configured")
  .action(async () => runWorker(await config(true)));

program
  .command("worker")
  .description("run a worker: joins the consumer group on the request topic and answers requests until SIGTERM")
  .action(async () => runWorker(await config()));

const seq = program.command("seq").description("define and inspect sequences");

seq
  .command("create")
  .argument("<name>", "1-64 characters of A-Z a-z 0-9 . _ -")
  .option("--kind <kind>", KIND_NAMES.map((k) => `${k}: ${KINDS[k].summary}`).join("; "), "monotonic")
  .option("--start <n>", "first number (of each day, for daily sequences)", "1")
  .option("--max-value <n>", "highest number ever issued (default 2^53 - 1)")
  .option("--time-zone <tz>", "IANA time zone of the days and dates of daily and formatted sequences (default UTC)")
  .option(
    "--format <template>",
    "formatted: literal text and {yyyy} {yy} {MM} {dd} {HH} {mm} {ss} {seq} {seq:N} {obf:N} {field:name} {field:name:N} {check:algorithm}, e.g. 'INV-{yy}{MM}-{seq:6}{check:damm}' (README: Formatted serial numbers)",
  )
  .option("--period <period>", `formatted: when the serial restarts, ${PERIODS.join(", ")} (default: the finest date the format prints)`)
  .option("--overflow <policy>", "formatted: a serial wider than {seq:N}: refuse (default; max-value stops there) or widen (printed whole)")
  .option("--digits <n>", "obfuscated: width of the values, 7-18 (default 10)")
  .option(
    "--key-version <v>",
    "obfuscated, and formatted with {obf:N}: the key version (1-9) new values are encoded with (default 1); keys come from IDD_OBFUSCATION_KEYS",
  )
  .option(
    "--layout <layout>",
    "snowflake: epoch=<ISO date or Unix ms>,unitMs=1,timeBits=41,workerBits=10,seqBits=12 (defaults; epoch: the start of today, UTC); at most 63 bits",
  )
  .option("--grant-log <mode>", GRANT_LOG_HELP, "relaxed")
  .description("define a sequence")
  .action(async (name: string, o: SeqOptions & { kind: string; start: string; grantLog: string }) => {
    const def = defineSequence({ name, ...o }, new Date());
    await withStore((s) => s.createSequence(def));
    process.stdout.write(`${show(def)}\n`);
  });

seq
  .command("update")
  .argument("<name>")
  .option("--max-value <n>", "new highest number")
  .option("--time-zone <tz>", "new time zone (daily and formatted sequences)")
  .option("--overflow <policy>", "formatted: refuse or widen")
  .option(
    "--key-version <v>",
    "obfuscated, and formatted with {obf:N}: rotate to this key version (1-9); values of earlier versions stay valid and never collide",
  )
  .option("--grant-log <mode>", GRANT_LOG_HELP)
  .description("change a sequence's max value, time zone, overflow or grant log mode (kind, start, format and period cannot change)")
  .action(async (name: string, o: SeqOptions) => {
    await withStore(async (s) => {
      const existing = await s.getSequence(name);
      if (!existing) throw new IddError("UNKNOWN_SEQUENCE", `no sequence named "${name}"`);
      const def = defineSequence({ name, ...o }, new Date(), existing);
      await s.updateSequence(def);
      process.stdout.write(`${show(def)}\n`);
    });
  });

seq
  .command("list")
  .description("list every sequence")
  .action(async () => {
    const all = await withStore((s) => s.listSequences());
    for (const d of all) process.stdout.write(`${show(d)}\n`);
    if (all.length === 0) say("no sequences defined yet: idd seq create <name>");
  });

seq
  .command("show")
  .argument("<name>")
  .description("show one sequence and its current reservation")
  .action(async (name: string) => {
    await withStore(async (s) => {
      const d = await s.getSequence(name);
      if (!d) throw new IddError("UNKNOWN_SEQUENCE", `no sequence named "${name}"`);
      process.stdout.write(`${show(d)}\n`);
      // The reservation in force per period: the highest max recorded (what Redis may hand out up to).
      const reserved = new Map<string, { max: bigint; epoch: number }>();
      for await (const r of s.reservationRecords([name])) {
        const k = r.period ?? "-";
        const was = reserved.get(k);
        reserved.set(k, { max: was && was.max > r.max ? was.max : r.max, epoch: Math.max(was?.epoch ?? 0, r.epoch) });
      }
      if (reserved.size === 0) say("no numbers reserved yet");
      for (const [period, r] of [...reserved].sort(([a], [b]) => (a < b ? -1 : 1)).slice(-10)) {
        process.stdout.write(`  period=${period} reserved-max=${r.max} epoch=${r.epoch}\n`);
      }
      if (reserved.size > 10) say(`${reserved.size - 10} older periods not shown`);
    });
  });

/** `--field name=value`, repeatable: collected into the request's fields. */
const field = (v: string, fields: Record<string, string> = {}) => {
  const eq = v.indexOf("=");
  const name = v.slice(0, eq);
  if (eq < 1) throw new InvalidArgumentError(`write name=value (got "${v.slice(0, 40)}")`);
  if (Object.hasOwn(fields, name)) throw new InvalidArgumentError(`field "${name.slice(0, 40)}" given twice`);
  return { ...fields, [name]: v.slice(eq + 1) };
};

/** A reply as one JSON line, every BigInt (ranges, issuedAt) as a string of its exact digits. */
const replyLine = (r: IdReply) => JSON.stringify(r, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));

program
  .command("next")
  .argument("<sequence>")
  .option("--count <n>", "how many numbers", positive, 1)
  .option("--field <name=value>", "a value for the sequence's {field:name} (formatted sequences); repeat for each field", field)
  .option("--timeout <ms>", "how long to wait for the reply", positive, 10_000)
  .option("--avro", "send the request as Avro through the schema registry instead of JSON")
  .option("--json", "print the whole reply as one JSON line (numbers as strings of exact digits), error replies too")
  .description("ask idd for numbers over Kafka, like any client, and print what the sequence issues, one a line")
  .addHelpText(
    "after",
    `
Prints the reply's formatted values for sequences that print them (formatted, obfuscated), else its
numbers; a reply with more than IDD_MAX_FORMATTED values carries numbers only (said on stderr). The
period, for sequences that restart, goes to stderr.
--json prints the reply instead: {"requestId","sequence","period","status","ranges":[{"first","last"}],
"formatted","formattedOmitted","error","issuedAt"}, with first, last and issuedAt as digit strings.
Exit codes: 0 numbers issued, 2 error reply (its code on stderr, and in the JSON with --json), no reply, or usage.`,
  )
  .action(
    async (sequence: string, o: { count: number; timeout: number; avro?: boolean; json?: boolean; field?: Record<string, string> }) => {
      const c = await config();
      const client = await IdClient.connect({
        brokers: c.services.kafkaBrokers,
        kafkaSecurity: c.services.security.kafka,
        requestTopic: c.requestTopic,
        timeoutMs: o.timeout,
        format: o.avro ? "avro" : "json",
        schemaRegistryUrl: c.services.schemaRegistryUrl,
        schemaRegistrySecurity: c.services.security.registry,
      });
      try {
        const opts = o.field ? { fields: o.field } : {};
        if (o.json) {
          const r = await client.reply(sequence, o.count, opts);
          process.stdout.write(`${replyLine(r)}\n`);
          if (r.error) say(`${r.error.code}: ${r.error.message}`);
          process.exitCode = r.status === "OK" ? 0 : 2;
          return;
        }
        const r = await client.next(sequence, o.count, opts);
        if (r.period) say(`period ${r.period}`);
        if (r.formattedOmitted) say("the reply carries numbers only: more values than IDD_MAX_FORMATTED");
        const lines = r.formatted.length > 0 ? r.formatted : r.numbers.map(String);
        process.stdout.write(`${lines.join("\n")}\n`);
      } finally {
        await client.close({ deleteReplyTopic: true });
      }
    },
  );

program
  .command("status")
  .option("--url <url...>", "a worker's HTTP surface (IDD_HTTP_HOST:IDD_HTTP_PORT), e.g. http://127.0.0.1:9464; repeat for more workers")
  .option("--json", "print the status snapshots as JSON (what /status.json serves), one a line")
  .option("--token <token>", "the workers' IDD_HTTP_TOKEN, when they have one (default: IDD_HTTP_TOKEN or IDD_HTTP_TOKEN_FILE)")
  .description("what the pool is doing: per sequence rate, headroom, block size, period and owner; partitions, owners and lag")
  .addHelpText(
    "after",
    `
With --url: each worker's own view, read from its /status.json (the same data as its /status page):
the sequences it serves (rate over the last 10 s, headroom in minutes at that rate, block size,
period, owner), its breakers, recent errors and grants; then the whole pool (partitions, owners, lag)
as the broker reports it. Workers serve only the sequences of their own partitions: name every
worker to see every sequence.
Without --url: only the pool, asked from the broker of the configured services (rates and headroom
live in the workers' memory; run workers with IDD_HTTP_PORT and pass --url for them).
Exit codes: 0 done, 1 some worker could not be read, 2 could not run.`,
  )
  .action(async (o: { url?: string[]; json?: boolean; token?: string }) => {
    if (!o.url) {
      const c = await config();
      const kafka = createKafka({ brokers: c.services.kafkaBrokers, clientId: "idd-status", security: c.services.security.kafka });
      try {
        const pool = await kafka.groupPartitions(c.groupId, c.requestTopic);
        const view = { group: c.groupId, topic: c.requestTopic, ...pool, at: Date.now() };
        if (o.json) process.stdout.write(`${JSON.stringify({ pool: view })}\n`);
        else process.stdout.write(`${poolLines(poolStatus(view), "from the broker").join("\n")}\n`);
        say("per-sequence rates and headroom are in the workers: idd status --url http://<worker>:<IDD_HTTP_PORT>");
      } finally {
        await kafka.close();
      }
      return;
    }
    const problems: string[] = [];
    const token = o.token ?? secretFromEnv(process.env, HTTP_TOKEN_ENV, problems)?.reveal();
    if (problems.length > 0) throw new IddError("CONFIG_INVALID", problems.join("\n"));
    const read = await Promise.all(
      o.url.map(async (url) => ({ url, r: await readStatus(url, { ...(token && { token }) }).catch((e: unknown) => e as Error) })),
    );
    const ok = read.flatMap(({ url, r }) => (r instanceof Error ? [] : [{ source: url, status: r }]));
    for (const { r } of read) if (r instanceof Error) say(errorLines(r).join("; "));
    if (o.json) for (const s of ok) process.stdout.write(`${JSON.stringify(s.status)}\n`);
    else if (ok.length > 0) process.stdout.write(statusText(ok));
    process.exitCode = ok.length < read.length ? 1 : 0;
  });

program
  .command("replay")
  .description("rebuild Redis cur/max of every counter (or of --sequence ones) from MongoDB, after Redis lost its state")
  .option("--sequence <name...>", "only these sequences (every period)")
  .option("--dry-run", "read and print, per counter, what would change; change nothing")
  .option("--settle-ms <ms>", "wait after fencing before reading MongoDB", (v) => positive(v), 500)
  .addHelpText(
    "after",
    `
Safe while workers run: each counter is fenced while it is rewritten (claims wait), and cur and max
only ever move forward. Run it again and nothing changes but the fence epochs. A full replay writes
the Redis marker that lets workers claim again after Redis restarted empty or was flushed.
Exit codes: 0 done (or dry run printed), 1 some counters could not be restored, 2 could not run.`,
  )
  .action(async (o: { sequence?: string[]; dryRun?: boolean; settleMs: number }) => {
    const c = await config();
    const { redisUrl, security } = c.services;
    const redis = createRedis(redisUrl, { ...(security.redisCa && { ca: security.redisCa }), options: { maxRetriesPerRequest: 2 } });
    const store = new Store(c.services.mongodbUrl);
    try {
      await redisConnected(redis, redisUrl, 5000);
      const r = await replay(redis, store, {
        sequences: o.sequence,
        dryRun: o.dryRun,
        settleMs: o.settleMs,
        progress: (l) => say(`replay: ${l}`),
        actor: `replay@${c.workerId}`,
      });
      for (const p of r.plans) {
        if (!o.dryRun && p.change === "none") continue;
        const b = p.before.cur === null ? "absent" : `cur=${p.before.cur} max=${p.before.max}`;
        process.stdout.write(`${p.key}\t${p.change}\t${b} -> cur=${p.cur} max=${p.max} epoch=${p.epoch} (from ${p.source})\n`);
      }
      say(
        `replay${o.dryRun ? " (dry run, nothing changed)" : ""}: ${r.counters} counters (${r.created} created, ${r.raised} raised, ${r.unchanged} unchanged), ${r.failed.length} failed; read ${r.reservationRecords} reservation and ${r.grantRecords} grant records in ${(r.ms / 1000).toFixed(1)}s${r.markerWritten ? "; Redis marker written, workers may claim again" : ""}`,
      );
      for (const f of r.failed) say(`failed: ${f.key}: ${f.error}`);
      process.exitCode = r.failed.length > 0 ? 1 : 0;
    } finally {
      redis.disconnect();
      await store.close();
    }
  });

const caught = (all: boolean) => (all ? "all" : "not all");
const ALGORITHMS_HELP = CHECK_ALGORITHMS.map((name) => {
  const a = checkAlgorithm(name);
  return `  ${name.padEnd(9)} ${caught(a.catchesAllSingleErrors).padEnd(7)} / ${caught(a.catchesAllAdjacentTranspositions).padEnd(7)}  ${a.summary}`;
}).join("\n");

program
  .command("check")
  .argument("<value>", "the number as typed; spaces, dashes and letters are ignored (a trailing X counts for mod11-2)")
  .requiredOption("--algorithm <name>", `check-digit algorithm: ${CHECK_ALGORITHMS.join(", ")}`)
  .option("--compute", "treat <value> as a payload and print its check character(s) instead")
  .description("check a number's check digit: prints valid (exit 0) or invalid (exit 1); --compute prints the check instead")
  .addHelpText(
    "after",
    `
Algorithms, and whether each catches every single-digit error / every adjacent transposition (ab -> ba)
(each claim is verified by brute force in idd's unit tests):
${ALGORITHMS_HELP}
Exit codes: 0 valid (or computed), 1 invalid, 2 usage error or unknown algorithm.`,
  )
  .exitOverride((e) => process.exit(e.exitCode === 0 ? 0 : 2))
  .action((value: string, o: { algorithm: string; compute?: boolean }) => {
    const algorithm = checkAlgorithm(o.algorithm);
    if (o.compute) {
      const digits = value.replace(/[^0-9]/g, "");
      if (!digits) throw new Error(`--compute needs a payload with at least one digit (got "${value.slice(0, 40)}")`);
      process.stdout.write(`${algorithm.compute(digits)}\n`);
      return;
    }
    const valid = algorithm.validate(typedValueDigits(algorithm, value));
    process.stdout.write(valid ? "valid\n" : "invalid\n");
    process.exitCode = valid ? 0 : 1;
  });

program
  .command("decode")
  .argument("<sequence>", "the sequence that issued the values")
  .argument("<value...>", "values it issued, as printed")
  .description(
    "what an id is made of, for support staff: a snowflake id's time, worker id and sequence; any other value's serial (issue position, in its period for sequences that restart), and a formatted value's fields and dates; an obfuscated serial (kind obfuscated, or {obf:N} in a format) also its key version (needs IDD_OBFUSCATION_KEYS or IDD_OBFUSCATION_KEYS_FILE). Any well-formed value decodes: decoding proves nothing about issuance",
  )
  .action(async (sequence: string, values: string[]) => {
    const def = await withStore((s) => s.getSequence(sequence));
    if (!def) throw new IddError("UNKNOWN_SEQUENCE", `no sequence named "${sequence}"`);
    if (def.snowflake) {
      for (const v of values) {
        const { time, worker, seq } = decompose(def.snowflake, v.trim());
        process.stdout.write(`${v}\ttime=${time.toISOString()} worker=${worker} seq=${seq}\n`);
      }
      return;
    }
    let keys: ObfuscationKeys | undefined;
    if (def.obfuscation) {
      const source = keySourceFromEnv(process.env);
      if (!source) throw new IddError("OBFUSCATION_KEY_MISSING", "set IDD_OBFUSCATION_KEYS or IDD_OBFUSCATION_KEYS_FILE to decode");
      keys = loadObfuscationKeys(source);
    }
    for (const v of values) process.stdout.write(`${v}\t${decodedText(decodeValue(def, v.trim(), keys))}\n`);
  });

program.parseAsync().catch((e: unknown) => {
  for (const line of errorLines(e)) say(line);
  process.exit(2);
});
