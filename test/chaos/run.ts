/**
 * `npm run chaos [-- --profile short|full]`: fault injection against a private local stack (see
 * harness.ts). Exit code 0 only when no number was issued twice, no order violation was seen, every
 * request ended with numbers or a typed error code, and every fault was recovered from; 1 otherwise.
 */
import { Command, InvalidArgumentError, Option } from "commander";
import { errorLines } from "../../src/core/errors.js";
import { CLUSTER_SERVICE_NAMES } from "../../stack/paths.js";
import { down } from "../../stack/stack.js";
import { chaosClusterLayout } from "./cluster-services.js";
import { runChaos } from "./harness.js";
import { chaosLayout } from "./private-stack.js";
import { FAULT_KINDS, type FaultKind, PROFILES, type ProfileName } from "./profiles.js";
import { formatReport } from "./report.js";

const positive = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("must be a positive integer");
  return n;
};

const kinds = (v: string): FaultKind[] => {
  const list = v.split(",").map((s) => s.trim());
  for (const k of list)
    if (!FAULT_KINDS.includes(k as FaultKind)) throw new InvalidArgumentError(`unknown fault "${k}" (known: ${FAULT_KINDS.join(", ")})`);
  return list as FaultKind[];
};

const describeProfile = (name: ProfileName) => {
  const counts = new Map<string, number>();
  for (const k of PROFILES[name].schedule) counts.set(k, (counts.get(k) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${n}× ${k}`).join(", ");
};

const program = new Command("chaos")
  .description(
    "Fault injection: a private local stack (.stack-chaos, ports 31xxx), idd worker processes under load from several clients, " +
      "and a schedule of faults; then every reply is checked for duplicates and order violations.",
  )
  .addOption(
    new Option("--profile <name>", "which schedule to run")
      .choices(["short", "full", "cluster", "network", "network-short", "broker-cut"])
      .default("full"),
  )
  .option("--skip <faults>", `comma-separated fault kinds to leave out (${FAULT_KINDS.join(", ")})`, kinds)
  .option("--workers <n>", "worker processes at the start (default 3; the network profiles: 4)", positive)
  .option("--clients <n>", "IdClients generating load", positive, 4)
  .option("--loops <n>", "concurrent request loops per client (each on one sequence)", positive, 20)
  .option("--request-timeout <ms>", "client timeout of every request", positive, 15_000)
  .option("--seed <n>", "seed of the load and of the victims (default: random, printed)", positive)
  .option(
    "--port-base <n>",
    "ports of the private stack (base + 379 redis, 92 kafka, 17 mongodb, 81 registry; env IDD_CHAOS_PORT_BASE); with --profile cluster, of the cluster stack (env IDD_CLUSTER_PORT_BASE, default 32000)",
    positive,
  )
  .option(
    "--stack-dir <dir>",
    "folder of the private stack (env IDD_CHAOS_STACK_DIR; default .stack-chaos); with --profile cluster, of the cluster stack (env IDD_CLUSTER_STACK_DIR; default .stack-cluster)",
  )
  .option("--hostile-scale <n>", "multiply the hostile phase's requests (good and hostile) by n", positive)
  .addHelpText(
    "after",
    `
Profiles:
  short  ${describeProfile("short")} (CI, about 2 minutes of faults)
  full   ${describeProfile("full")}
  cluster ${describeProfile("cluster")} (the cluster profile's 3 brokers, Sentinel and
         Redis Cluster, started in its folder with a MongoDB and a registry, and stopped at the end
         if this run started them; workers on Sentinel, then on the Redis Cluster)
  network ${describeProfile("network")} (root: packet-level faults on loopback, toxiproxy,
         libfaketime; a split brain of the Sentinel group with zombies, then one worker cut from
         Redis, MongoDB, Kafka, slowed on its Redis and Kafka links, its clock stepped)
  network-short  the same faults held shorter (test/chaos/chaos.test.ts)
overload: an open-loop burst of single-number requests from a raw kafkajs producer; every one answered once.
hostile: hostile requests (bad reply addresses, huge headers, bad JSON, count 0) among good ones; each
dead-lettered or answered with its code, once; no consumer crash; fresh requests answered within a second.
After Redis losses the workers restore what they need by themselves (no \`idd replay\`). The run stops early when a fault is not recovered from.
Exit code 0 only when: no duplicate and no order violation per (sequence, period), every request got
numbers or a typed error code, every fault was recovered from, no worker exited on its own, and every
check of the overload and hostile phases passed.
Worker logs are kept in .stack-chaos/workers/, service logs in .stack-chaos/logs/.`,
  )
  .action(
    async (o: {
      profile: ProfileName;
      skip?: FaultKind[];
      workers?: number;
      clients: number;
      loops: number;
      requestTimeout: number;
      seed?: number;
      portBase?: number;
      stackDir?: string;
      hostileScale?: number;
    }) => {
      layout = { portBase: o.portBase, stackDir: o.stackDir, cluster: o.profile === "cluster" || o.profile.startsWith("network") };
      const result = await runChaos({
        ...(o.portBase !== undefined && { portBase: o.portBase }),
        ...(o.stackDir !== undefined && { stackDir: o.stackDir }),
        profile: o.profile,
        skip: o.skip ?? [],
        ...(o.workers !== undefined && { workers: o.workers }),
        clients: o.clients,
        loops: o.loops,
        requestTimeoutMs: o.requestTimeout,
        ...(o.seed !== undefined && { seed: o.seed }),
        ...(o.hostileScale !== undefined && { hostileScale: o.hostileScale }),
      });
      process.stdout.write(formatReport(result));
      process.exitCode = result.passed ? 0 : 1;
    },
  );

// Ctrl-C: the workers are in our process group and stop by themselves; the stack's services run
// detached, so stop them here (the next run would stop leftovers too).
let layout: { portBase?: number | undefined; stackDir?: string | undefined; cluster?: boolean } = {};
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    process.stderr.write(`chaos: ${signal}: stopping the private stack\n`);
    const { portBase, stackDir, cluster } = layout;
    const where = { ...(portBase !== undefined && { portBase }), ...(stackDir !== undefined && { stackDir }) };
    // On the cluster profile: every service of the cluster stack (a run may have found some running).
    const stopping = cluster
      ? down({ layout: chaosClusterLayout(where), services: [...CLUSTER_SERVICE_NAMES, "kafka", "mongodb", "registry"] })
      : down({ layout: chaosLayout(where) });
    stopping.finally(() => process.exit(130));
  });
}

program.parseAsync().catch((e: unknown) => {
  for (const line of errorLines(e)) process.stderr.write(`chaos: ${line}\n`);
  process.exit(1);
});
