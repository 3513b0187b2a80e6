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

/**
 * Logs at most `perSecond` lines a second per message text, so a stream of bad input cannot flood
 * the log; the first line after a quiet spell says how many were left out (`suppressed`).
 */
export function rateLimited(logger: Logger, perSecond = 5, clock: () => number = Date.now) {
  const windows = new Map<string, { start: number; n: number; suppressed: number }>();
  return (level: "warn" | "error", fields: Record<string, unknown>, message: string): void => {
    const now = clock();
    let w = windows.get(message);
    if (!w || now - w.start >= 1000) {
      const suppressed = w?.suppressed ?? 0;
      w = { start: now, n: 0, suppressed: 0 };
      windows.set(message, w);
      if (suppressed > 0) fields = { ...fields, suppressed };
    }
    if (w.n++ < perSecond) logger[level](fields, message);
    else w.suppressed++;
  };
}
