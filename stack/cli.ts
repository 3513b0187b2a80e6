/** `npm run stack -- up|down|status [service…]`: the local stack, no Docker needed. */
import { Command, InvalidArgumentError } from "commander";
import { redactUrl } from "../src/config/secret.js";
import { errorLines } from "../src/core/errors.js";
import { envFile, SERVICE_NAMES, type ServiceName, VERSIONS } from "./paths.js";
import { down, status, up } from "./stack.js";

const say = (line: string) => process.stderr.write(`stack: ${line}\n`);

function services(names: string[]): ServiceName[] | undefined {
  if (names.length === 0) return undefined;
  for (const n of names) {
    if (!SERVICE_NAMES.includes(n as ServiceName))
      throw new InvalidArgumentError(`unknown service "${n}" (known: ${SERVICE_NAMES.join(", ")})`);
  }
  return names as ServiceName[];
}

const program = new Command("stack")
  .description(
    `Real Kafka ${VERSIONS.kafka} (KRaft), Redis, FerretDB ${VERSIONS.ferretdb} (MongoDB protocol) and Apicurio Registry ${VERSIONS.apicurio} on loopback, without Docker.`,
  )
  .addHelpText(
    "after",
    `
Services: ${SERVICE_NAMES.join(", ")} (all when none is named).
Environment:
  IDD_STACK_DIR              data, logs, pid files and the env file (default: <repo>/.stack)
  IDD_CACHE_DIR              installed services, shared by checkouts (default: ~/.cache/idd)
  IDD_STACK_PORT_BASE        ports are base+379 redis, +92/+93 kafka, +17 mongodb, +81 registry (default 29000);
                             secured: +94 kafka SASL_SSL, +380 redis-auth, +18 mongodb-auth
                             (settings in <IDD_STACK_DIR>/secured.env)
  IDD_STACK_READY_TIMEOUT_S  how long each service may take to become ready (default 180)
\`up\` writes the connection settings to <IDD_STACK_DIR>/env; idd reads them when nothing else is configured.`,
  );

program
  .command("up")
  .description("install what is missing (first run only), start what is not running, wait until every service answers")
  .argument("[service...]", "services to start")
  .action(async (names: string[]) => {
    const t0 = Date.now();
    const r = await up({ services: services(names), progress: say });
    say(
      `up in ${((Date.now() - t0) / 1000).toFixed(1)}s (${r.started.length ? `started ${r.started.join(", ")}` : "all were running"}); settings in ${envFile(r.layout)}:`,
    );
    for (const [k, v] of Object.entries(r.env)) process.stdout.write(`${k}=${k.endsWith("_URL") ? redactUrl(v) : v}\n`);
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
      process.stdout.write(`${r.service.padEnd(10)} ${state.padEnd(14)} 127.0.0.1:${r.port}${r.pid ? `  pid ${r.pid}` : ""}${mem}\n`);
    }
    if (total) process.stdout.write(`total resident memory: ${(total / 1024).toFixed(0)} MiB\n`);
    if (rows.some((r) => r.pid !== undefined && !r.ready)) process.exitCode = 1;
  });

program.parseAsync().catch((e: unknown) => {
  for (const line of errorLines(e)) say(line);
  process.exit(2);
});
