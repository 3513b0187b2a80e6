/** The partitioner idd uses for keyed records is Kafka's Java default: checked against the independent port in protocol/home-partition.ts. */
import fc from "fast-check";
import { expect, test } from "vitest";
import { homePartition } from "../../protocol/home-partition.js";
import { partitionForKey } from "./partitioner.js";

test("equals the Java client's (and kafkajs's) default partitioner for any name and partition count", () => {
  fc.assert(
    fc.property(fc.string({ unit: "binary", maxLength: 40 }), fc.integer({ min: 1, max: 1000 }), (name, partitions) => {
      expect(homePartition(name, partitions)).toBe(partitionForKey("t", Buffer.from(name, "utf8"), partitions));
    }),
    { numRuns: 5000 },
  );
});
