// The seam first, as the worker loads it: kafkajs is loaded through it.
import "./index.js";
import { readFileSync } from "node:fs";
import { createRequire, Module } from "node:module";
import { dirname } from "node:path";
import fc from "fast-check";
import { expect, test } from "vitest";
import { GROUPING_MODULE, groupMessagesPerPartition, installed, SEND_MESSAGES_MODULE } from "./group-messages.js";

const require = createRequire(import.meta.url);
type Grouping = typeof groupMessagesPerPartition;

/** Runs `fn` with `entries` in the require cache in place of what is there, then puts the cache back. */
function withCache<T>(entries: Record<string, NodeJS.Module | undefined>, fn: () => T): T {
  const saved = Object.fromEntries(Object.keys(entries).map((k) => [k, require.cache[k]]));
  const put = (es: Record<string, NodeJS.Module | undefined>) => {
    for (const [k, m] of Object.entries(es)) {
      if (m) require.cache[k] = m;
      else delete require.cache[k];
    }
  };
  put(entries);
  try {
    return fn();
  } finally {
    put(saved);
  }
}

/** kafkajs's own grouping, read from its file. */
const original = withCache({ [GROUPING_MODULE]: undefined }, () => require(GROUPING_MODULE) as Grouping);

test("kafkajs's sendMessages.js requires the grouping from the path replaced", () => {
  expect(readFileSync(SEND_MESSAGES_MODULE, "utf8")).toMatch(/require\('\.\/groupMessagesPerPartition'\)/);
  expect(require.resolve("./groupMessagesPerPartition", { paths: [dirname(SEND_MESSAGES_MODULE)] })).toBe(GROUPING_MODULE);
  expect(original).not.toBe(groupMessagesPerPartition);
});

test("loading kafkajs through the seam puts the linear grouping in its place", () => {
  expect(installed).toBe(true);
  expect(require.cache[SEND_MESSAGES_MODULE]).toBeDefined();
  expect(require.cache[GROUPING_MODULE]?.exports).toBe(groupMessagesPerPartition);
});

test("kafkajs's producer groups with what the require cache holds at that path", async () => {
  const called: unknown[] = [];
  const spy = new Module(GROUPING_MODULE);
  spy.loaded = true;
  spy.exports = (a: unknown) => {
    called.push(a);
    throw new Error("grouped by the spy");
  };
  const createSendMessages = withCache(
    { [SEND_MESSAGES_MODULE]: undefined, [GROUPING_MODULE]: spy },
    () => require(SEND_MESSAGES_MODULE) as (deps: unknown) => (o: unknown) => Promise<unknown>,
  );
  const cluster = {
    addMultipleTargetTopics: async () => {},
    refreshMetadataIfNecessary: async () => {},
    findTopicPartitionMetadata: () => [{ partitionId: 0 }],
    isConnected: () => true,
  };
  const send = createSendMessages({
    logger: { debug() {}, error() {} },
    cluster,
    partitioner: () => 0,
    eosManager: {},
    retrier: (fn: (bail: (e: Error) => never) => Promise<unknown>) =>
      fn((e) => {
        throw e;
      }),
  });
  await expect(send({ acks: -1, topicMessages: [{ topic: "t", messages: [{ value: "v" }] }] })).rejects.toThrow("grouped by the spy");
  expect(called).toHaveLength(1);
});

test("the linear grouping gives what kafkajs's gives", () => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ key: fc.string({ maxLength: 3 }), partition: fc.option(fc.integer({ min: 0, max: 7 }), { nil: undefined }) })),
      fc.integer({ min: 0, max: 8 }),
      (messages, partitions) => {
        const args = {
          topic: "t",
          partitionMetadata: Array.from({ length: partitions }, (_, i) => ({ partitionId: i })),
          messages,
          partitioner: ({ message }: { message: { key: string; partition?: number } }) =>
            message.partition ?? message.key.length % Math.max(1, partitions),
        };
        const mine = groupMessagesPerPartition(args);
        const theirs = original(args);
        expect(Object.keys(mine)).toEqual(Object.keys(theirs));
        for (const k of Object.keys(theirs)) expect(mine[Number(k)]).toEqual(theirs[Number(k)]);
        for (const k of Object.keys(theirs)) expect(mine[Number(k)]?.every((m, i) => m === theirs[Number(k)]?.[i])).toBe(true);
      },
    ),
  );
});
