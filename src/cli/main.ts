#!/usr/bin/env node
/** The `idd` command: worker, sequences, numbers. Each command lives in src/cli/commands/; this file builds the program. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Command } from "commander";
import { ENV } from "../config/config.js";
import { SERVICE_VARS } from "../config/services.js";
import { PACKAGE_ROOT } from "../core/package-root.js";
import { addAuditCommand } from "./commands/audit.js";
import { addCheckCommand } from "./commands/check.js";
import { addDecodeCommand } from "./commands/decode.js";
import { addNextCommand } from "./commands/next.js";
import { addReplayCommand } from "./commands/replay.js";
import { addSeqCommand } from "./commands/seq.js";
import { addStartCommand } from "./commands/start.js";
import { addStatusCommand } from "./commands/status.js";
import { addWorkerCommand } from "./commands/worker.js";
import { exitOnError } from "./output.js";

const { version } = JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string };

const program = new Command("idd")
  .version(version)
  .description("idd, the Kafka ID dispenser: unique, ordered sequence numbers over Kafka")
  .addHelpText(
    "after",
    `
Services: set all of ${SERVICE_VARS.join(", ")} to use your own;
set none and idd uses the local stack (\`npm run stack -- up\`; \`idd start\` starts it when needed).
Settings: ${Object.values(ENV).join(", ")} (see docs/settings.md).
`,
  );

// In the order `idd --help` lists them.
for (const add of [
  addStartCommand,
  addWorkerCommand,
  addSeqCommand,
  addNextCommand,
  addStatusCommand,
  addReplayCommand,
  addAuditCommand,
  addCheckCommand,
  addDecodeCommand,
]) {
  add(program);
}

program.parseAsync().catch(exitOnError);
