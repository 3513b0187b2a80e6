/**
 * `npm run bench [-- flags]`: idd's speed on this machine, as ratios measured in one run (the
 * machine is shared and noisy; absolute numbers vary, ratios less so). Sections:
 *
 *  - closed-loop (test/bench/closed-loop.ts): latency with a fixed number of waiting callers:
 *    Redis baseline, allocation in process, strict vs relaxed, idd over Kafka.
 *  - open-loop (test/bench/open-loop.ts): capacity: a raw kafkajs generator publishes bursts and
 *    paced loads against 3 echo-service processes (the upper limit), 3 idd workers loaded by
 *    murmur2 clients (requests land on their home partition) and 3 more loaded by librdkafka-
 *    default (CRC-32) clients, whose requests are mostly forwarded home: the cost of routing.
 *  - client (test/bench/client-throughput.ts): requests a second one IdClient drives.
 *  - formats (test/bench/formats.ts): formatted issuance against plain numbers, in the dispenser.
 *
 * Flags:
 *   --only closed-loop,open-loop,client    sections to run (default: all)
 *   --seconds N --workers N --loops N      closed loop: s per measurement (10), workers per pool (2), callers (16)
 *   --bursts 100000[,…] | none             open loop: burst sizes (default 100000)
 *   --million                              open loop: add a burst of 1,000,000
 *   --backlog 30000[,…]                    open loop: also backlogs, published while the target's processes are
 *                                          SIGSTOPped, then drained (run last; default none)
 *   --rates 1000,2000,4000 | none          open loop: paced rates, req/s
 *   --paced-seconds N                      open loop: length of each paced run (15)
 *   --targets echo,idd,idd-crc32           open loop: what to load (default all three; idd-crc32 = idd on
 *                                          librdkafka-default clients, most requests forwarded home; it adds
 *                                          a third to the section's time, about 1.5 min with the defaults);
 *                                          also idd-standalone, idd-sentinel, idd-cluster: idd on a Redis of its
 *                                          own, standalone, under Sentinel or a Cluster (the cluster profile's
 *                                          folder and ports, started when needed)
 *   --warmup N                             open loop: unreported burst per target first (20000)
 *   --processes N --partitions N           open loop and client: processes per target (3), request partitions (6)
 *   --settle N --idle-timeout N            open loop: pause between runs (2 s); give up after N s without a reply (30)
 *   --no-dedupe                            open loop: idd workers with IDD_DEDUPE_WINDOW_MS=0
 *   --profile DIR                          open loop: CPU-profile the targets' processes into DIR, print where time went
 *   --client-inflight 2000[,…]             client: next() calls in flight
 *   --client-seconds N                     client: length of each measurement (10)
 *   --formats-seconds N --formats-rounds N formats: seconds per turn (2), turns per sequence and count (3)
 * Uses the local stack (started if needed, with IDD_STACK_PORT_BASE / IDD_STACK_DIR) unless the four
 * service variables are set.
 */
import { resolve } from "node:path";
import { benchServices } from "../support/bench-services.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { ownDatabase } from "../support/workers.js";
import { has, num, nums, str, unknownFlags, words } from "./args.js";
import { clientThroughput } from "./client-throughput.js";
import { closedLoop } from "./closed-loop.js";
import { formatsBench } from "./formats.js";
import { OPEN_LOOP_TARGETS, type OpenLoopTarget, openLoop } from "./open-loop.js";
import { stackPids } from "./stack-pids.js";

const say = (s: string) => process.stdout.write(`${s}\n`);
const SECTIONS = ["closed-loop", "open-loop", "client", "formats"] as const;
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
  "profile",
];
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
      rates: nums("rates", [1000, 2000, 4000]),
      backlogs: nums("backlog", []),
      pacedSeconds: num("paced-seconds", 15),
      warmup: num("warmup", 20_000),
      targets: words("targets", ["echo", "idd", "idd-crc32"], OPEN_LOOP_TARGETS) as OpenLoopTarget[],
      partitions,
      processes,
      settleSeconds: num("settle", 2),
      idleTimeoutSeconds: num("idle-timeout", 30),
      iddEnv: has("no-dedupe") ? { IDD_DEDUPE_WINDOW_MS: "0" } : {},
      ...(str("profile") && { profileDir: resolve(str("profile") as string) }),
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
} finally {
  await new MongoQueries(services.mongodbUrl).dropDatabase().catch(() => {});
  await stack.stop();
}
process.exit(0);
