#!/usr/bin/env node
/** The `idd` command. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Command } from "commander";
import { SERVICE_VARS, serviceSettings } from "../config/services.js";
import { isIddError } from "../errors.js";
import { PACKAGE_ROOT } from "../package-root.js";

const say = (line: string) => process.stderr.write(`idd: ${line}\n`);
const { version } = JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string };

const program = new Command("idd")
  .version(version)
  .description("idd, the Kafka ID dispenser: unique, ordered sequence numbers over Kafka")
  .addHelpText(
    "after",
    `
Services: set all of ${SERVICE_VARS.join(", ")} to use your own;
set none and idd uses the local stack (npm run stack -- up), starting it when needed.
`,
  );

program
  .command("start")
  .description("start idd against the configured services, or against the local stack when none are configured")
  .action(async () => {
    let settings = serviceSettings({ ...process.env, IDD_STACK_DIR: "/nonexistent-idd-stack" });
    if (!settings) {
      say("no services configured: bringing up the local stack (npm run stack -- up)");
      // The local stack is development tooling: loaded only when it is needed.
      const { up } = await import("../../stack/stack.js");
      const { fromVars } = await import("../config/services.js");
      const r = await up({ progress: (l) => say(`stack: ${l}`) });
      settings = fromVars(r.env, "local stack");
    }
    say(
      `services: kafka ${settings.kafkaBrokers.join(",")}, redis ${settings.redisUrl}, mongodb ${settings.mongodbUrl}, registry ${settings.schemaRegistryUrl}`,
    );
    say("the dispenser worker is not built yet (issue #3): the services are up, nothing else to start");
  });

program.parseAsync().catch((e: unknown) => {
  if (isIddError(e)) {
    for (const line of e.message.split("\n")) say(`${e.code}: ${line}`);
  } else {
    say(e instanceof Error ? (e.stack ?? e.message) : String(e));
  }
  process.exit(2);
});
