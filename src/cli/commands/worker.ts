/** `idd worker`: a worker against the configured services, until SIGTERM or SIGINT. */
import type { Command } from "commander";
import type { Config } from "../../config/config.js";
import { warnUnknownVariables } from "../../config/unknown-variables.js";
import { createLogger } from "../../core/log.js";
import { Worker } from "../../worker/worker.js";
import { commandConfig } from "../load-config.js";
import { EXIT } from "../output.js";

/** Runs a worker with `c`; a signal stops it after the batch in flight, then the process exits. */
export async function runWorker(c: Config): Promise<void> {
  const logger = createLogger(c.logLevel, { worker: c.workerId });
  logger.info({ services: c.services.source }, "configuration valid");
  warnUnknownVariables(process.env, logger);
  let worker: Worker | undefined;
  let stopping = false;
  const stopNow = (w: Worker) =>
    w.stop().then(
      () => process.exit(0),
      (e: unknown) => {
        logger.error({ err: (e as Error).message }, "stop failed");
        process.exit(EXIT.notAllGood);
      },
    );
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "stopping: finishing the batch in flight");
    // A stop waits on Kafka (the commit, leaving the group) and the stores: when they are gone it
    // could wait for their timeouts and retries, past a supervisor's grace period. Exiting instead
    // is what a kill would do, and every guarantee holds across a kill (design §5.2).
    setTimeout(() => {
      logger.warn(
        { code: "STOP_TIMEOUT", stopTimeoutMs: c.stopTimeoutMs },
        "stop did not finish in time (Kafka or a store unreachable?): exiting; what was not committed is read again by the next owners",
      );
      process.exit(EXIT.notAllGood); // stopped, not cleanly: as a stop that failed
    }, c.stopTimeoutMs).unref();
    if (worker) void stopNow(worker); // else: stopped as soon as it has started
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  worker = await Worker.start({
    config: c,
    logger,
    // Rejoining with a setting the brokers refuse can only fail again: stop, exit as a bad configuration does.
    onRefused: () => {
      stopping = true;
      if (!worker) process.exit(EXIT.error);
      void worker.stop().finally(() => process.exit(EXIT.error));
    },
  });
  if (stopping) await stopNow(worker);
}

export function addWorkerCommand(program: Command): void {
  program
    .command("worker")
    .description("run a worker: joins the consumer group on the request topic and answers requests until SIGTERM")
    .action(async () => runWorker(await commandConfig()));
}
