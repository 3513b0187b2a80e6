/**
 * Which src/ files one warm request runs code in, measured (docs/design.md §6 lists them; the test
 * is test/worker/warm-trace.test.ts). `npx tsx test/support/warm-trace.ts` against the configured
 * services or the local stack prints them, a line each with the functions that ran.
 *
 * How: a worker runs in this process under V8's block coverage. A client that stays connected
 * (a child process, so its code is not counted) warms a monotonic sequence up, then asks one number
 * at a time. Around each ask, coverage is taken, and once more over an idle window at least as
 * long: an ask counts a file when a block of it ran during the ask (until the worker's step, its
 * commit included, is done) and not at all while idle, so what the worker runs anyway (its fetch
 * loop, heartbeats) is left out. A file is printed when most of five asks counted it: a timer (the
 * gapless sweep, a sample) that fires in one ask's window, or in one idle window, changes nothing.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { Session } from "node:inspector/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";

interface Span {
  startOffset: number;
  endOffset: number;
  count: number;
}
interface Fn {
  functionName: string;
  ranges: Span[];
}
interface Coverage {
  result: { url: string; functions: Fn[] }[];
}

const ASKS = 5;
const WARM = 4;
const HERE = import.meta.dirname;

/** The path under src/ of a script's URL; undefined for code outside src/. */
function srcPath(url: string): string | undefined {
  const at = url.indexOf("/src/");
  return at < 0 || url.includes("/node_modules/") ? undefined : url.slice(at + 5);
}

/** How often the code at `s` ran in `fns`: the count of the innermost range holding it (0 when none). */
function countAt(fns: Fn[] | undefined, s: Span): number {
  let best: Span | undefined;
  for (const f of fns ?? [])
    for (const r of f.ranges)
      if (
        r.startOffset <= s.startOffset &&
        r.endOffset >= s.endOffset &&
        (!best || r.endOffset - r.startOffset <= best.endOffset - best.startOffset)
      )
        best = r;
  return best?.count ?? 0;
}

/** Per file, the functions with a block that ran in `during` and not at all in `idle`. */
function ranOnlyDuring(during: Coverage, idle: Coverage): Map<string, Set<string>> {
  const idleOf = new Map(idle.result.map((s) => [s.url, s.functions]));
  const files = new Map<string, Set<string>>();
  for (const s of during.result) {
    const file = srcPath(s.url);
    if (!file) continue;
    for (const f of s.functions)
      for (const r of f.ranges)
        if (r.count > 0 && countAt(idleOf.get(s.url), r) === 0)
          files.set(file, (files.get(file) ?? new Set()).add(f.functionName || "(anonymous)"));
  }
  return files;
}

const run = randomUUID().slice(0, 8);
// Topics, a group and a sequence of its own: it never joins a pool's group.
process.env.IDD_REQUEST_TOPIC = `warmtrace.${run}.requests`;
process.env.IDD_DLQ_TOPIC = `warmtrace.${run}.dlq`;
process.env.IDD_GROUP_ID = `warmtrace-${run}`;
process.env.IDD_REQUEST_PARTITIONS = "1";
const sequence = `warmtrace-${run}`;

const session = new Session();
session.connect();
await session.post("Profiler.enable");
await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: true });
const take = async () => (await session.post("Profiler.takePreciseCoverage")) as Coverage;

// idd's kafkajs modules first, as `idd worker` has them (src/transport/kafka/kafkajs-modules.ts).
(await import("../../src/transport/kafka/kafkajs-modules.js")).loadKafkajs();
const { commandConfig } = await import("../../src/cli/load-config.js");
const { createLogger } = await import("../../src/core/log.js");
const { defineSequence } = await import("../../src/sequences/definition.js");
const { Store } = await import("../../src/storage/store.js");
const { Worker } = await import("../../src/worker/worker.js");

const config = await commandConfig(false);
const store = new Store(config.services.mongodbUrl);
await store.createSequence(defineSequence({ name: sequence }, new Date()));
const worker = await Worker.start({ config, logger: createLogger("warn", { worker: "warm-trace" }), onRefused: () => {} });
const client = spawn(process.execPath, ["--import", "tsx", join(HERE, "warm-trace-client.ts"), sequence], {
  env: process.env,
  stdio: ["pipe", "pipe", "inherit"],
});
const answers = createInterface({ input: client.stdout })[Symbol.asyncIterator]();
/** Resolves when the worker's next step is done: its replies delivered, its offsets committed. */
let stepped = () => {};
worker.events.on("worker.step", () => stepped());
const ask = async (): Promise<string> => {
  const stepDone = new Promise<void>((r) => {
    stepped = r;
  });
  client.stdin.write("\n");
  await stepDone;
  const line = (await answers.next()).value as string | undefined;
  if (line === undefined || line.startsWith("error")) throw new Error(`the client got no number: ${line ?? "it ended"}`);
  return line;
};

try {
  // Until the worker owns the partition and the counter holds a block: the asks after are warm.
  for (let warm = 0; warm < WARM; ) {
    try {
      await ask();
      warm++;
    } catch (e) {
      if (performance.now() > 120_000) throw e;
    }
  }
  const seen = new Map<string, { asks: number; fns: Set<string> }>();
  for (let i = 0; i < ASKS; i++) {
    await take();
    const started = performance.now();
    await ask();
    const during = await take();
    await new Promise((r) => setTimeout(r, Math.max(200, performance.now() - started)));
    for (const [file, fns] of ranOnlyDuring(during, await take())) {
      const s = seen.get(file) ?? { asks: 0, fns: new Set() };
      s.asks++;
      for (const f of fns) s.fns.add(f);
      seen.set(file, s);
    }
  }
  const counted = [...seen].filter(([, s]) => s.asks > ASKS / 2).sort(([a], [b]) => (a < b ? -1 : 1));
  for (const [file, s] of counted) console.log(`${file}\t${[...s.fns].join(" ")}`);
} finally {
  client.stdin.end();
  await worker.stop();
  await store.close();
}
process.exit(0);
