/** kafkajs's own logs, routed into idd's pino logger. */
import { type LogEntry, logLevel } from "kafkajs";
import type { Logger } from "pino";

const LEVELS: Record<number, "error" | "warn" | "info" | "debug"> = {
  [logLevel.ERROR]: "error",
  [logLevel.WARN]: "warn",
  [logLevel.INFO]: "info",
  [logLevel.DEBUG]: "debug",
};

/** A kafkajs `logCreator` writing into `logger` (component "kafkajs"). */
export function kafkaLogCreator(logger: Logger) {
  const child = logger.child({ component: "kafkajs" });
  return () =>
    ({ level, log }: LogEntry) => {
      const { message, ...extra } = log;
      child[LEVELS[level] ?? "info"](extra, message);
    };
}
