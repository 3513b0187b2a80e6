/** The one pino logger idd writes to (stderr); kafkajs's logs are routed into it by the Kafka transport. */
import { type Logger, pino } from "pino";

export function createLogger(level: string, base: Record<string, unknown> = {}): Logger {
  return pino({ level, base: { ...base } }, pino.destination(2));
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
