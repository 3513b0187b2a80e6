import { createRequire } from "node:module";
import fc from "fast-check";
import { expect, test } from "vitest";
import { groupMessagesPerPartition } from "./group-messages.js";

const require = createRequire(import.meta.url);
/** kafkajs's own grouping, loaded afresh: the require cache holds ours (every test file runs with the seam). */
const original = (() => {
  const path = require.resolve("kafkajs/src/producer/groupMessagesPerPartition.js");
  const ours = require.cache[path];
  delete require.cache[path];
  try {
    return require(path) as typeof groupMessagesPerPartition;
  } finally {
    if (ours) require.cache[path] = ours;
  }
})();

test("the linear grouping gives what kafkajs's gives", () => {
  expect(original).not.toBe(groupMessagesPerPartition);
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
        for (const k of Object.keys(theirs)) {
          const [a, b] = [mine[Number(k)] ?? [], theirs[Number(k)] ?? []];
          expect(a.length).toBe(b.length);
          expect(a.every((m, i) => m === b[i])).toBe(true);
        }
      },
    ),
  );
});
