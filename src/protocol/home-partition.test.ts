/**
 * The home partition is Kafka's Java default for the sequence name: checked here against Kafka's own
 * values, and against kafkajs's independent port in src/transport/kafka/partitioner.test.ts.
 */
import { expect, test } from "vitest";
import { homePartition, murmur2 } from "./home-partition.js";

test("known values from Kafka's own Utils.murmur2 (kafka-clients 3.9.2): every tail length, negative hashes, UTF-8", () => {
  // name, Utils.murmur2(utf8), toPositive(...) % 12, % 7 — printed by a Java program against the jar.
  const java: [string, number, number, number][] = [
    ["a", -1563381124, 4, 5],
    ["ab", 316155434, 2, 0],
    ["abc", 479470107, 3, 4],
    ["abcd", -1323649548, 8, 5],
    ["order", 1818166172, 8, 4],
    ["invoice", -13775302, 10, 0],
    ["INV-2611", -446145847, 1, 2],
    ["séquence", -1264165043, 9, 1],
    ["orders.eu-west-1", 76190066, 2, 1],
    ["x", 2121525046, 10, 4],
  ];
  for (const [name, hash, p12, p7] of java) {
    expect(murmur2(Buffer.from(name, "utf8"))).toBe(hash);
    expect([homePartition(name, 12), homePartition(name, 7)]).toEqual([p12, p7]);
  }
});
