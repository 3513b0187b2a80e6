/** `idd status`: what the pool is doing, from the workers' /status.json or, without --url, from the broker. */
import type { Command } from "commander";
import { type Config, HTTP_TOKEN_ENV } from "../../config/config.js";
import { secretFromEnv } from "../../config/secret.js";
import { errorLines, IddError } from "../../core/errors.js";
import { poolStatus } from "../../ops/status.js";
import { readStatus } from "../../ops/status-client.js";
import { poolLines, statusText } from "../../ops/status-text.js";
import { createKafka } from "../../transport/kafka/index.js";
import { commandConfig } from "../load-config.js";
import { EXIT, say } from "../output.js";

interface StatusOptions {
  url?: string[];
  json?: boolean;
  token?: string;
}

/** Without --url: the pool's partitions, owners and lag, as the broker of the configured services reports them. */
async function printPoolFromBroker(c: Config, json: boolean): Promise<void> {
  const kafka = createKafka({ brokers: c.services.kafkaBrokers, clientId: "idd-status", security: c.services.security.kafka });
  try {
    const pool = await kafka.groupPartitions(c.groupId, c.requestTopic);
    const view = { group: c.groupId, topic: c.requestTopic, ...pool, at: Date.now() };
    if (json) process.stdout.write(`${JSON.stringify({ pool: view })}\n`);
    else process.stdout.write(`${poolLines(poolStatus(view), "from the broker").join("\n")}\n`);
    say("per-sequence rates and headroom are in the workers: idd status --url http://<worker>:<IDD_HTTP_PORT>");
  } finally {
    await kafka.close();
  }
}

/** With --url: each worker's own view; exit 1 when some worker could not be read. */
async function printWorkerStatuses(urls: string[], o: StatusOptions): Promise<void> {
  const problems: string[] = [];
  const token = o.token ?? secretFromEnv(process.env, HTTP_TOKEN_ENV, problems)?.reveal();
  if (problems.length > 0) throw new IddError("CONFIG_INVALID", problems.join("\n"));
  const read = await Promise.all(
    urls.map(async (url) => ({ url, r: await readStatus(url, { ...(token && { token }) }).catch((e: unknown) => e as Error) })),
  );
  const ok = read.flatMap(({ url, r }) => (r instanceof Error ? [] : [{ source: url, status: r }]));
  for (const { r } of read) if (r instanceof Error) say(errorLines(r).join("; "));
  if (o.json) for (const s of ok) process.stdout.write(`${JSON.stringify(s.status)}\n`);
  else if (ok.length > 0) process.stdout.write(statusText(ok));
  process.exitCode = ok.length < read.length ? EXIT.notAllGood : EXIT.ok;
}

export function addStatusCommand(program: Command): void {
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
period, owner, what is left before it runs out and when), its breakers, recent errors and grants; then the whole pool (partitions, owners, lag)
as the broker reports it. Workers serve only the sequences of their own partitions: name every
worker to see every sequence.
Without --url: only the pool, asked from the broker of the configured services (rates and headroom
live in the workers' memory; run workers with IDD_HTTP_PORT and pass --url for them).
Exit codes: 0 done, 1 some worker could not be read, 2 could not run.`,
    )
    .action(async (o: StatusOptions) => {
      if (!o.url) return printPoolFromBroker(await commandConfig(), o.json === true);
      return printWorkerStatuses(o.url, o);
    });
}
