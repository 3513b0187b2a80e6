/**
 * kafkajs's own logs, routed into idd's pino logger. kafkajs logs states it waits out by itself at
 * error level (a consumer "Crash" on a coordinator still loading, "Restarting the consumer"): those
 * are written as warnings (info for the restart) in idd's words, kafkajs's message beside them, so
 * that error stays for what needs a person. A failed CreateTopics response is idd's to judge
 * (admin.ts `ensureTopics`: workers starting together race to create the same topics, and the
 * losers' "already exists" is expected; any other failure fails the start with its own error), so
 * kafkajs's line for it is debug. So is a Metadata response saying a topic does not exist: idd
 * judges that itself (a reply topic that does not exist is dead-lettered, REPLY_TOPIC_UNKNOWN), and
 * the common case is a client's reply topic deleted when it closed, which a producer still names
 * (gone-targets.ts).
 */
import type { LogEntry } from "kafkajs";
import type { Logger } from "pino";
import { isUnknownTopic, selfHealingState } from "./errors.js";

type Level = "error" | "warn" | "info" | "debug";

/** kafkajs's `logLevel` values (log-creator.test.ts checks them against kafkajs's). */
export const LEVELS: Record<number, Level> = { 1: "error", 2: "warn", 4: "info", 5: "debug" };

/** The level and message idd writes for one kafkajs line. */
export function kafkaLine(level: number, message: string, extra: Record<string, unknown>): { level: Level; msg: string; kafkajs?: string } {
  const at = LEVELS[level] ?? "info";
  if (at !== "error" && at !== "warn") return { level: at, msg: message };
  if (message.startsWith("Response CreateTopics(")) return { level: "debug", msg: message };
  if (message.startsWith("Response Metadata(") && isUnknownTopic({ message: extra.error })) return { level: "debug", msg: message };
  if (/^Restarting the consumer in \d+ms/.test(message))
    return { level: "info", msg: "Kafka consumer restarting after a retriable error (kafkajs)", kafkajs: message };
  const says = selfHealingState(`${message} ${typeof extra.error === "string" ? extra.error : ""}`);
  return says ? { level: "warn", msg: says, kafkajs: message } : { level: at, msg: message };
}

/** A kafkajs `logCreator` writing into `logger` (component "kafkajs"). */
export function kafkaLogCreator(logger: Logger) {
  const child = logger.child({ component: "kafkajs" });
  return () =>
    ({ level, log }: LogEntry) => {
      const { message, ...extra } = log;
      const line = kafkaLine(level, message, extra);
      child[line.level](line.kafkajs === undefined ? extra : { ...extra, kafkajs: line.kafkajs }, line.msg);
    };
}
