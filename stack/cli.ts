/** `npm run stack -- up|down|status [service…]`: the local stack, no Docker needed. */
import { existsSync } from "node:fs";
import { Command, InvalidArgumentError } from "commander";
import { redactUrl } from "../src/config/secret.js";
import { errorLines } from "../src/core/errors.js";
import { DEFAULT_TABLE, HOSTS, hostUser, installNetfaults, setupNetfaults } from "./netfaults.js";
import {
  ALL_SERVICE_NAMES,
  CLUSTER_SERVICE_NAMES,
  clusterEnvFile,
  DEFAULT_KAFKA_LINE,
  envFile,
  KAFKA_LINES,
  layoutFromEnv,
  PROFILES,
  type ProfileName,
  SERVICE_NAMES,
  type ServiceName,
  VERSIONS,
} from "./paths.js";
import { down, status, up } from "./stack.js";

const say = (line: string) => process.stderr.write(`stack: ${line}\n`);

function services(names: string[]): ServiceName[] | undefined {
  if (names.length === 0) return undefined;
  for (const n of names) {
    if (!ALL_SERVICE_NAMES.includes(n as ServiceName))
      throw new InvalidArgumentError(`unknown service "${n}" (known: ${ALL_SERVICE_NAMES.join(", ")})`);
  }
  return names as ServiceName[];
}

const program = new Command("stack")
  .description(
    `Real Kafka ${VERSIONS.kafka} (KRaft; or ${Object.values(KAFKA_LINES)
      .filter((v) => v !== VERSIONS.kafka)
      .join(
        ", ",
      )}), Redis, FerretDB ${VERSIONS.ferretdb} (MongoDB protocol) and Apicurio Registry ${VERSIONS.apicurio} on loopback, without Docker.`,
  )
  .addHelpText(
    "after",
    `
Services: ${SERVICE_NAMES.join(", ")} (the default profile: all of them when none is named).
Profile cluster (\`up --profile cluster\`): the default services and ${CLUSTER_SERVICE_NAMES.join(", ")}:
  3 Kafka nodes in KRaft (each broker and controller) on cluster base+101..103, a Redis primary (+400)
  with a replica (+401) and 3 Sentinels (+411..413, master name idd), a Redis Cluster of 3 primaries
  and 3 replicas (+421..426); their endpoints go to <IDD_STACK_DIR>/cluster.env.
\`down\` with no service named stops every service of either profile.
Environment:
  IDD_STACK_KAFKA            the Kafka line: ${Object.keys(KAFKA_LINES).join(" or ")} (default ${DEFAULT_KAFKA_LINE}; same as --kafka)
  IDD_STACK_DIR              data, logs, pid files and the env file (default: <repo>/.stack)
  IDD_CACHE_DIR              installed services, shared by checkouts (default: ~/.cache/idd)
  IDD_STACK_PORT_BASE        ports are base+379 redis, +92/+93 kafka, +17 mongodb, +81 registry (default 29000);
                             secured: +94 kafka SASL_SSL, +380 redis-auth, +18 mongodb-auth
                             (settings in <IDD_STACK_DIR>/secured.env)
  IDD_CLUSTER_PORT_BASE      the cluster profile's port base (default 32000), the same the tests' cluster
                             stack uses (test/support/cluster-stack.ts): one cluster per base at a time
  IDD_STACK_READY_TIMEOUT_S  how long each service may take to become ready (default 180)
\`up\` writes the connection settings to <IDD_STACK_DIR>/env; idd reads them when nothing else is configured.`,
  );

program
  .command("up")
  .description("install what is missing (first run only), start what is not running, wait until every service answers")
  .argument("[service...]", "services to start")
  .option("--profile <name>", `which services when none is named: ${Object.keys(PROFILES).join(" or ")}`, "default")
  .option("--kafka <line>", `the Kafka line: ${Object.keys(KAFKA_LINES).join(" or ")} (default: IDD_STACK_KAFKA or ${DEFAULT_KAFKA_LINE})`)
  .action(async (names: string[], opts: { profile: string; kafka?: string }) => {
    const t0 = Date.now();
    if (!(opts.profile in PROFILES))
      throw new InvalidArgumentError(`unknown profile "${opts.profile}" (known: ${Object.keys(PROFILES).join(", ")})`);
    const layout = layoutFromEnv({ ...process.env, ...(opts.kafka && { IDD_STACK_KAFKA: opts.kafka }) });
    const r = await up({ services: services(names) ?? PROFILES[opts.profile as ProfileName], layout, progress: say });
    say(
      `up in ${((Date.now() - t0) / 1000).toFixed(1)}s (${r.started.length ? `started ${r.started.join(", ")}` : "all were running"}); settings in ${envFile(r.layout)}:`,
    );
    if (existsSync(envFile(r.layout)))
      for (const [k, v] of Object.entries(r.env)) process.stdout.write(`${k}=${k.endsWith("_URL") ? redactUrl(v) : v}\n`);
    if (r.cluster) {
      say(`cluster profile's endpoints in ${clusterEnvFile(r.layout)}:`);
      for (const [k, v] of Object.entries(r.cluster)) process.stdout.write(`${k}=${v}\n`);
    }
  });

program
  .command("down")
  .description("stop the processes the stack started (from its pid files), nothing else")
  .argument("[service...]", "services to stop")
  .action(async (names: string[]) => {
    const stopped = await down({ services: services(names), progress: say });
    say(stopped.length ? `down (${stopped.join(", ")})` : "nothing was running");
  });

program
  .command("status")
  .description("which services run, on which port, whether they answer, and their memory")
  .action(async () => {
    const rows = await status();
    let total = 0;
    for (const r of rows) {
      total += r.rssKiB ?? 0;
      const state = r.pid === undefined ? "stopped" : r.ready ? "ready" : "not answering";
      const mem = r.rssKiB === undefined ? "" : `  ${(r.rssKiB / 1024).toFixed(0)} MiB`;
      process.stdout.write(`${r.service.padEnd(15)} ${state.padEnd(14)} 127.0.0.1:${r.port}${r.pid ? `  pid ${r.pid}` : ""}${mem}\n`);
    }
    if (total) process.stdout.write(`total resident memory: ${(total / 1024).toFixed(0)} MiB\n`);
    if (rows.some((r) => r.pid !== undefined && !r.ready)) process.exitCode = 1;
  });

const netfault = program
  .command("netfault")
  .description(
    `network faults between real processes (stack/netfaults.ts): nftables on loopback by uid (hosts: ${HOSTS.map(hostUser).join(", ")}), toxiproxy, libfaketime`,
  );
netfault
  .command("install")
  .description("install nftables, faketime and toxiproxy, create the host users (first run only)")
  .action(async () => {
    const tools = await installNetfaults(layoutFromEnv(), say);
    process.stdout.write(`nft=${tools.nft}\ntoxiproxy=${tools.toxiproxy}\nlibfaketime=${tools.libfaketime}\n`);
    for (const [h, id] of Object.entries(tools.users))
      process.stdout.write(`${hostUser(h as (typeof HOSTS)[number])}=${id.uid}:${id.gid}\n`);
  });
netfault
  .command("cleanup")
  .description("remove a run's nftables table, its toxiproxy and every process of the host users (what a killed run left)")
  .option("--table <name>", "the nftables table", DEFAULT_TABLE)
  .action(async (opts: { table: string }) => {
    const n = await setupNetfaults({ layout: layoutFromEnv(), table: opts.table, progress: say });
    await n.cleanup();
    say(`netfault: table inet ${opts.table} removed, toxiproxy and host processes stopped`);
  });

program.parseAsync().catch((e: unknown) => {
  for (const line of errorLines(e)) say(line);
  process.exit(2);
});
