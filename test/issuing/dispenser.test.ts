/**
 * The dispenser on its own, without Kafka, on real Redis and MongoDB: one reply per request in
 * order, numbers strictly increasing across two dispensers that take a partition from each other
 * (G2), a retried requestId answered with the same numbers by the other one (G6), per-request
 * errors with stable codes, and a fenced dispenser publishing nothing.
 */
import { randomUUID } from "node:crypto";
import { afterAll, expect, inject, test } from "vitest";
import type { IdReply } from "../../src/protocol/reply.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { request as ask, beat, DispenserRig, numbersOf as numbers } from "../support/dispenser-rig.js";

const rig = new DispenserRig(inject("services"), "disp");
const store = rig.store;
const dispenser = (autoCreate = false) => rig.dispenser({ autoCreate }).d;
const request = (sequence: string, requestId: string, count = 1, deadline: bigint | null = null) =>
  ask(sequence, count, requestId, { deadline });
afterAll(() => rig.close());

test("replies in request order; numbers increase across a takeover; a retry elsewhere gets the same numbers; a fenced dispenser publishes nothing", async () => {
  const def = defineSequence({ name: `disp-${randomUUID()}` }, new Date());
  await store.createSequence(def);
  const [a, b] = [dispenser(), dispenser()];

  const first = await a.answer(
    0,
    [request(def.name, "r1", 3), request("nobody-defined-this", "r2"), request(def.name, "r3", 1, 1n), request(def.name, "r4", 2)],
    beat,
  );
  expect(first.map((r) => r.error?.code ?? r.status)).toEqual(["OK", "UNKNOWN_SEQUENCE", "DEADLINE_EXCEEDED", "OK"]);
  expect(first.map((r) => r.requestId)).toEqual(["r1", "r2", "r3", "r4"]);
  const fromA = numbers(first);
  expect(fromA).toEqual([...fromA].sort((x, y) => (x < y ? -1 : 1)));
  expect(fromA).toHaveLength(5);

  // The partition moves to b: r1 retried there gets a's numbers; new numbers are above all of a's.
  const second = await b.answer(0, [request(def.name, "r1", 3), request(def.name, "r5", 4)], beat);
  expect(second[0]?.ranges).toEqual(first[0]?.ranges);
  expect(numbers([second[1] as IdReply])[0] as bigint).toBeGreaterThan(fromA.at(-1) as bigint);

  // a has not noticed yet: its next batch is fenced at recording; its heartbeat then fails (the
  // group moved on), so nothing it issued is ever returned for publishing.
  const lostPartition = async () => {
    throw new Error("The group is rebalancing");
  };
  // Requests without a requestId are never kept for dedupe, but their batch is fenced all the same.
  await expect(a.answer(0, [request(def.name, ""), request(def.name, "")], lostPartition)).rejects.toThrow(/rebalancing/);
  const r6 = await b.answer(0, [request(def.name, "r6")], beat);
  expect(numbers(r6)[0] as bigint).toBeGreaterThan(numbers([second[1] as IdReply]).at(-1) as bigint);
});

test("auto-created sequences, counts and losing a partition (its unissued blocks are given up)", async () => {
  const { d, ownership } = rig.dispenser({ autoCreate: true });
  ownership.assigned([1, 2]);
  const name = `auto-${randomUUID()}`;
  const replies = await d.answer(1, [request(name, "x1", 10), request(name, "x2", 10)], beat);
  expect(numbers(replies)).toEqual(Array.from({ length: 20 }, (_, i) => BigInt(i + 1)));
  expect(await store.getSequence(name)).toMatchObject({ kind: "monotonic", period: "never" });
  const { lost, dropped } = ownership.assigned([2]);
  expect(lost).toEqual([1]);
  expect(dropped).toBeGreaterThan(0n);
  expect(d.stats).toMatchObject({ numbers: 20, deduped: 0, expired: 0 });
});
