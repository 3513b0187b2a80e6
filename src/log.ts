/** The one pino logger idd writes to (stderr), with kafkajs's logs routed into it. */
import { type LogEntry, logLevel } from "kafkajs";
import { type Logger, pino } from "pino";

export function createLogger(level: string, base: Record<string, unknown> = {}): Logger {
  return pino({ level, base: { ...base } }, pino.destination(2));
}

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
