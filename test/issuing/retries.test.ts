/**
 * Retries inside the dedupe window (G6) now that issuing is optimistic (one Redis round trip per
 * step): a retry gets its recorded answer back, also when it would fail now (past its deadline, a
 * count the kind refuses, its sequence gone from the cache's reach); the numbers the retry took are
 * never published (a gap, G4): not in a reply, not in the audited trail, not shown to hooks as
 * issued; and with a `before` hook, retries are still never shown to it.
 */
import { randomUUID } from "node:crypto";
import pino from "pino";
import { afterAll, expect, inject, test } from "vitest";
import type { IssuedEvent } from "../../src/hooks/hook.js";
import { Hooks } from "../../src/hooks/hooks.js";
import type { IdReply } from "../../src/protocol/reply.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { request as ask, beat, DispenserRig, numbersOf as numbers } from "../support/dispenser-rig.js";

const rig = new DispenserRig(inject("services"), "retry");
const store = rig.store;
afterAll(() => rig.close());

const request = (sequence: string, requestId: string, count = 1, deadline: bigint | null = null) =>
  ask(sequence, count, requestId, { deadline });
const codes = (replies: IdReply[]) => replies.map((r) => r.error?.code ?? r.status);

async function trail(sequence: string): Promise<bigint[]> {
  const out: bigint[] = [];
  for await (const r of store.issuanceInOrder(sequence, null)) for (let n = r.first; n <= r.last; n++) out.push(n);
  return out;
}

test("a retry gets its recorded answer, even past its deadline; its own numbers are a gap, never published or audited", async () => {
  const def = defineSequence({ name: `retry-${randomUUID()}`, audit: true }, new Date());
  await store.createSequence(def);
  const { d } = rig.dispenser();

  const first = await d.answer(0, [request(def.name, "r1", 3), request(def.name, "r2", 2)], beat);
  expect(codes(first)).toEqual(["OK", "OK"]);
  // r1 again, twice in one batch, once past its deadline and once with another count; r3 is new.
  const again = await d.answer(0, [request(def.name, "r1", 5), request(def.name, "r3"), request(def.name, "r1", 3, 1n)], beat);
  expect(codes(again)).toEqual(["OK", "OK", "OK"]);
  expect(again[0]?.ranges).toEqual(first[0]?.ranges);
  expect(again[2]?.ranges).toEqual(first[0]?.ranges);
  // r2 retried alone, past its deadline: the step issues nothing, the lookup still finds it.
  const late = await d.answer(0, [request(def.name, "r2", 2, 1n)], beat);
  expect(late[0]?.ranges).toEqual(first[1]?.ranges);
  expect(d.stats.deduped).toBe(3);
  expect(d.stats.expired).toBe(0); // late retries that got their answer expired nothing

  // Published: r1, r2 and r3, each once. r3 lies above the 5 numbers the r1 retry took (a gap).
  const published = numbers([...first, again[1] as IdReply]);
  expect(published).toEqual([1n, 2n, 3n, 4n, 5n, 11n]);
  // The trail writes answers sent again once more (their first write may have failed), never the gap.
  expect([...new Set(await trail(def.name))].sort((x, y) => (x < y ? -1 : 1))).toEqual(published);
  // A request never answered still fails when it is late.
  const fresh = await d.answer(0, [request(def.name, "r4", 1, 1n)], beat);
  expect(codes(fresh)).toEqual(["DEADLINE_EXCEEDED"]);
  expect(d.stats.expired).toBe(1);
});

test("with a before hook, retries are not shown to it; observers see the answer actually sent", async () => {
  const seen: string[] = [];
  const issued: IssuedEvent[] = [];
  const hook = {
    name: "watch",
    before: (r: { requestId: string }) => {
      seen.push(r.requestId);
      return r.requestId === "no" ? { refuse: "no" } : undefined;
    },
    after: (e: IssuedEvent) => {
      issued.push(e);
    },
  };
  const logger = pino({ level: "silent" });
  const hooks = new Hooks([hook], { timeoutMs: 1000, maxPending: 1000, logger });
  const { d } = rig.dispenser({ hooks, autoCreate: true, topic: `retry-${randomUUID()}` });
  const name = `retry-hook-${randomUUID()}`;

  const first = await d.answer(0, [request(name, "a", 2), request(name, "no")], beat);
  expect(codes(first)).toEqual(["OK", "HOOK_REFUSED"]);
  const again = await d.answer(0, [request(name, "a", 2), request(name, "b")], beat);
  expect(again[0]?.ranges).toEqual(first[0]?.ranges);
  expect(seen).toEqual(["a", "no", "b"]);
  await hooks.close();
  expect(issued.map((e) => [e.requestId, e.ranges[0]?.first, e.deduped])).toEqual([
    ["a", 1n, false],
    ["a", 1n, true],
    ["b", 3n, false],
  ]);
});

test("without hooks, observers still see the recorded answer of a retry, marked deduped", async () => {
  const issued: IssuedEvent[] = [];
  const hooks = new Hooks([{ name: "observe", after: (e: IssuedEvent) => void issued.push(e) }], {
    timeoutMs: 1000,
    maxPending: 1000,
    logger: pino({ level: "silent" }),
  });
  const { d } = rig.dispenser({ hooks, autoCreate: true, topic: `retry-${randomUUID()}` });
  const name = `retry-obs-${randomUUID()}`;
  await d.answer(0, [request(name, "a", 2)], beat);
  const again = await d.answer(0, [request(name, "a", 2), request(name, "b")], beat);
  expect(numbers(again)).toEqual([1n, 2n, 5n]);
  await hooks.close();
  expect(issued.map((e) => [e.requestId, e.ranges[0]?.first, e.deduped])).toEqual([
    ["a", 1n, false],
    ["a", 1n, true],
    ["b", 5n, false],
  ]);
});
