/** `idd start`: a worker, against the local stack (brought up when needed) when no services are configured. */
import type { Command } from "commander";
import { commandConfig } from "../load-config.js";
import { runWorker } from "./worker.js";

export function addStartCommand(program: Command): void {
  program
    .command("start")
    .description("run a worker against the configured services, or against the local stack (started when needed) when none are configured")
    .action(async () => runWorker(await commandConfig(true)));
}
