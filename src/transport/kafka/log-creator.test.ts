import { logLevel } from "kafkajs";
import { expect, test } from "vitest";
import { selfHealingState } from "./errors.js";
import { kafkaLine, LEVELS } from "./log-creator.js";

test("idd's names for kafkajs's log levels are kafkajs's values", () => {
  expect(LEVELS).toEqual({ [logLevel.ERROR]: "error", [logLevel.WARN]: "warn", [logLevel.INFO]: "info", [logLevel.DEBUG]: "debug" });
});

test("a consumer crash on a coordinator still loading is a warning in idd's words, kafkajs's line beside it", () => {
  const message = "Crash: KafkaJSProtocolError: The coordinator is loading and hence can't process requests for this group";
  expect(kafkaLine(logLevel.ERROR, message, { groupId: "g" })).toEqual({
    level: "warn",
    msg: "Kafka group coordinator still loading; kafkajs retries",
    kafkajs: message,
  });
  expect(kafkaLine(logLevel.ERROR, "Restarting the consumer in 300ms", {}).level).toBe("info");
  expect(kafkaLine(logLevel.ERROR, "Failed to connect to seed broker", { error: "The group coordinator is not available" }).msg).toBe(
    "Kafka group coordinator not ready; kafkajs retries",
  );
});

test("a failed CreateTopics response is debug: ensureTopics judges it (another worker created the topics first)", () => {
  const line = kafkaLine(logLevel.ERROR, "Response CreateTopics(key: 19, version: 3)", { error: "Topic creation errors" });
  expect(line).toEqual({ level: "debug", msg: "Response CreateTopics(key: 19, version: 3)" });
  expect(kafkaLine(logLevel.ERROR, "Response Produce(key: 0, version: 3)", { error: "x" }).level).toBe("error");
});

test("a Metadata response saying a topic does not exist is debug: idd judges topics itself; other Metadata errors stay errors", () => {
  const unknown = kafkaLine(logLevel.ERROR, "Response Metadata(key: 3, version: 6)", {
    error: "This server does not host this topic-partition",
  });
  expect(unknown).toEqual({ level: "debug", msg: "Response Metadata(key: 3, version: 6)" });
  const denied = kafkaLine(logLevel.ERROR, "Response Metadata(key: 3, version: 6)", {
    error: "Not authorized to access topics: [Topic authorization failed.]",
  });
  expect(denied.level).toBe("error");
});

test("any other error stays an error, with kafkajs's message; other levels are kept", () => {
  expect(kafkaLine(logLevel.ERROR, "Crash: KafkaJSNonRetriableError: Invalid offset", {})).toEqual({
    level: "error",
    msg: "Crash: KafkaJSNonRetriableError: Invalid offset",
  });
  expect(kafkaLine(logLevel.INFO, "Consumer has joined the group", {}).level).toBe("info");
});

test("the self-healing states are found by type or message, through wrapping errors", () => {
  const loading = { type: "GROUP_LOAD_IN_PROGRESS", message: "x" };
  expect(selfHealingState({ name: "KafkaJSNumberOfRetriesExceeded", cause: loading })).toMatch(/coordinator still loading/);
  expect(selfHealingState({ originalError: { type: "NOT_LEADER_FOR_PARTITION" } })).toMatch(/leader moved/);
  expect(selfHealingState(new Error("The group is rebalancing, so a rejoin is needed"))).toMatch(/rebalancing; rejoining/);
  expect(selfHealingState(new Error("Connection refused"))).toBeUndefined();
});
