/**
 * `npm run bench [-- flags]`: idd's speed on this machine, as ratios measured in one run (the
 * machine is shared and noisy; absolute numbers vary, ratios less so). Sections:
 *
 *  - closed-loop (test/bench/closed-loop.ts): latency with a fixed number of waiting callers:
 *    Redis baseline, allocation in process, strict vs relaxed, idd over Kafka.
 *  - open-loop (test/bench/open-loop.ts): capacity: a raw kafkajs generator publishes bursts and
 *    paced loads against 3 kafkajs echo-service processes (the upper limit of a kafkajs service), 3
 *    librdkafka echo processes (confluent-kafka: the limit of request/reply on the broker), 3 idd
 *    workers loaded by murmur2 clients (requests land on their home partition) and 3 more loaded by
 *    librdkafka-default (CRC-32) clients, whose requests are mostly forwarded home: the cost of
 *    routing. Paced runs on warm sequences, on sequences created just before the run (cold), and
 *    with one sequence's rate jumping tenfold; per idd run the step phases from the workers' /metrics.
 *  - client (test/bench/client-throughput.ts): requests a second one IdClient drives.
 *  - formats (test/bench/formats.ts): formatted issuance against plain numbers, in the dispenser.
 *  - gapless (test/bench/gapless.ts): gapless numbers (a MongoDB document each) against plain ones, in the
 *    dispenser, at 1 request a step and at --gapless-step requests a step; and CONFIRMs.
 *
 * Flags:
 *   --help                                 print this and exit
 *   --only closed-loop,open-loop,client    sections to run (default: all)
 *   --seconds N --workers N --loops N      closed loop: s per measurement (10), workers per pool (2), callers (16)
 *   --bursts 100000[,…] | none             open loop: burst sizes (default 100000)
 *   --million                              open loop: add a burst of 1,000,000
 *   --backlog 30000[,…]                    open loop: also backlogs, published while the target's processes are
 *                                          SIGSTOPped, then drained (run last; default none)
 *   --rates 1000,4000 | none               open loop: paced rates on warm sequences, req/s; a rate (or burst size)
 *                                          given more than once runs in rounds (--rates 4000,4000,4000), and the
 *                                          table ends with each ratio's median over them, and its range
 *   --cold-rates 4000 | none               open loop: paced rates on sequences created just before the run
 *   --jump-rates 4000 | none               open loop: paced rates where one sequence's rate jumps ×N a third in
 *   --jump-factor N                        open loop: that jump (10)
 *   --paced-seconds N                      open loop: length of each paced run (15)
 *   --generator librdkafka | kafkajs       open loop: who publishes the requests: a librdkafka client from outside
 *                                          the project (test/bench/generator-librdkafka.py, confluent-kafka; the
 *                                          default) or kafkajs (test/bench/load-generator.ts; the default with
 *                                          --backlog, which only it runs); either on both partitioners
 *   --targets echo,echo-rdk,idd,idd-crc32  open loop: what to load (default these four, and idd-base with --base;
 *                                          echo-rdk = librdkafka echo, in the examples' Python venv, made on
 *                                          first use; idd-crc32 = idd on librdkafka-default clients, most
 *                                          requests forwarded home; echo-plt = an echo on @platformatic/kafka,
 *                                          on Node 24)
 *   --base DIR                             open loop: with target idd-base, idd workers from the checkout in DIR
 *                                          (A/B in one run: --targets echo,idd,idd-base; idd-base-crc32: idd-base on
 *                                          librdkafka-default clients, against idd-crc32)
 *   --base-node PATH                       open loop: idd-base's workers run on this node binary (default: this
 *                                          one), e.g. Node 24 against Node 20 in one run: --base . --base-node …
 *                                          also idd-standalone, idd-sentinel, idd-cluster: idd on a Redis of its
 *                                          own, standalone, under Sentinel or a Cluster (the cluster profile's
 *                                          folder and ports, started when needed); idd-gzip, idd-snappy,
 *                                          idd-lz4, idd-zstd: idd on murmur2 clients compressing with that codec
 *                                          (ratio rows against idd: the cost of reading it)
 *   --warmup N                             open loop: unreported burst per target first (20000)
 *   --processes N --partitions N           open loop and client: processes per target (3), request partitions (6)
 *   --sequences N                          open loop: sequences the requests go to round-robin (12; e.g. 1000), spread
 *                                          evenly over the partitions, 1 in partitions of them landing home on
 *                                          librdkafka's default partitioner
 *   --settle N --idle-timeout N            open loop: pause between runs (2 s); give up after N s without a reply (30)
 *   --no-dedupe                            open loop: idd workers with IDD_DEDUPE_WINDOW_MS=0
 *   --profile DIR                          open loop: CPU- and allocation-profile the targets' processes into DIR,
 *                                          print where time went and what allocated
 *   --client-inflight 2000[,…]             client: next() calls in flight
 *   --client-seconds N                     client: length of each measurement (10)
 *   --formats-seconds N --formats-rounds N formats: seconds per turn (2), turns per sequence and count (3)
 *   --gapless-seconds N --gapless-rounds N gapless: seconds per turn (2), turns per target and step size (3)
 *   --gapless-step N                       gapless: requests a step in the larger step size (100)
 *   --help                                 this text
 * Uses the local stack (started if needed, with IDD_STACK_PORT_BASE / IDD_STACK_DIR) unless the four
 * service variables are set.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { benchServices } from "../support/bench-services.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { ownDatabase } from "../support/workers.js";
import { has, num, nums, str, unknownFlags, words } from "./args.js";
import { clientThroughput } from "./client-throughput.js";
import { closedLoop } from "./closed-loop.js";
import { formatsBench } from "./formats.js";
import { gaplessBench } from "./gapless.js";
import { OPEN_LOOP_TARGETS, type OpenLoopTarget, openLoop } from "./open-loop.js";
import { stackPids } from "./stack-pids.js";

const say = (s: string) => process.stdout.write(`${s}\n`);
const SECTIONS = ["closed-loop", "open-loop", "client", "formats", "gapless"] as const;
const FLAGS = [
  "only",
  "seconds",
  "workers",
  "loops",
  "bursts",
  "backlog",
  "million",
  "rates",
  "paced-seconds",
  "targets",
  "warmup",
  "processes",
  "partitions",
  "settle",
  "idle-timeout",
  "no-dedupe",
  "client-inflight",
  "client-seconds",
  "formats-seconds",
  "formats-rounds",
  "gapless-seconds",
  "gapless-rounds",
  "gapless-step",
  "profile",
  "cold-rates",
  "jump-rates",
  "jump-factor",
  "help",
  "base",
  "base-node",
  "generator",
  "sequences",
];
if (has("help")) {
  // The comment at the top of this file is the help.
  const text = readFileSync(new URL(import.meta.url), "utf8");
  say((/\/\*\*\n([\s\S]*?)\n \*\//.exec(text)?.[1] ?? "").replace(/^ \*(?: |$)/gm, ""));
  process.exit(0);
}
const unknown = unknownFlags(FLAGS);
if (unknown.length > 0) {
  process.stderr.write(`unknown flags: ${unknown.join(" ")} (see the top of test/bench/dispenser.ts)\n`);
  process.exit(2);
}
const only = words("only", [...SECTIONS], SECTIONS);
const partitions = num("partitions", 6);
const processes = num("processes", 3);

const stack = await benchServices(say);
const services = ownDatabase(stack.services, "bench");
const pids = stackPids(services);
say(
  `idd bench: ${only.join(", ")}; node ${process.version}; ` +
    `CPU from /proc for ${Object.keys(pids).join(", ") || "no stack service (services not from the local stack)"}`,
);
const took = (section: string, t0: number) => say(`(${section} took ${((performance.now() - t0) / 1000).toFixed(0)} s)`);
try {
  let t0 = performance.now();
  if (only.includes("closed-loop")) {
    await closedLoop(services, say, { seconds: num("seconds", 10), workers: num("workers", 2), loops: num("loops", 16) });
    took("closed loop", t0);
    say("");
  }
  t0 = performance.now();
  if (only.includes("open-loop")) {
    await openLoop(services, pids, say, {
      bursts: [...nums("bursts", [100_000]), ...(has("million") ? [1_000_000] : [])],
      rates: nums("rates", [1000, 4000]),
      coldRates: nums("cold-rates", [4000]),
      jumpRates: nums("jump-rates", [4000]),
      jumpFactor: num("jump-factor", 10),
      backlogs: nums("backlog", []),
      // Backlogs hold the target while publishing: only the kafkajs generator does that.
      generator: words("generator", [nums("backlog", []).length > 0 ? "kafkajs" : "librdkafka"], ["librdkafka", "kafkajs"])[0] as
        | "librdkafka"
        | "kafkajs",
      pacedSeconds: num("paced-seconds", 15),
      warmup: num("warmup", 20_000),
      targets: words(
        "targets",
        ["echo", "echo-rdk", "idd", "idd-crc32", ...(str("base") ? ["idd-base"] : [])],
        OPEN_LOOP_TARGETS,
      ) as OpenLoopTarget[],
      partitions,
      processes,
      sequences: num("sequences", 12),
      settleSeconds: num("settle", 2),
      idleTimeoutSeconds: num("idle-timeout", 30),
      iddEnv: has("no-dedupe") ? { IDD_DEDUPE_WINDOW_MS: "0" } : {},
      ...(str("profile") && { profileDir: resolve(str("profile") as string) }),
      ...(str("base") && { baseDir: resolve(str("base") as string) }),
      ...(str("base-node") && { baseNode: resolve(str("base-node") as string) }),
    });
    took("open loop", t0);
    say("");
  }
  t0 = performance.now();
  if (only.includes("client")) {
    await clientThroughput(services, pids, say, {
      inFlight: nums("client-inflight", [2000]),
      seconds: num("client-seconds", 10),
      partitions,
      processes,
    });
    took("client", t0);
    say("");
  }
  t0 = performance.now();
  if (only.includes("formats")) {
    await formatsBench(services, say, { seconds: num("formats-seconds", 2), rounds: num("formats-rounds", 3) });
    took("formats", t0);
  }
  t0 = performance.now();
  if (only.includes("gapless")) {
    await gaplessBench(services, say, {
      seconds: num("gapless-seconds", 2),
      rounds: num("gapless-rounds", 3),
      step: num("gapless-step", 100),
    });
    took("gapless", t0);
  }
} finally {
  await new MongoQueries(services.mongodbUrl).dropDatabase().catch(() => {});
  await stack.stop();
}
process.exit(0);
