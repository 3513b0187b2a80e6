/**
 * Why an audited sequence's numbers were given up (src/storage/releases.ts): a batch that fails as a
 * whole after taking numbers releases them (`batch-abandoned`), a retry's own numbers are released
 * (`retry-replaced`), and idd audit prints the why in the given-up gap's evidence.
 */
import { randomUUID } from "node:crypto";
import { afterAll, expect, inject, test } from "vitest";
import { audit, type CounterGap } from "../../src/audit/audit.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { request as ask, beat, DispenserRig } from "../support/dispenser-rig.js";

const rig = new DispenserRig(inject("services"), "releases");
afterAll(() => rig.close());

test("a batch that fails after taking numbers releases them; a retry's own numbers too; idd audit says why", async () => {
  const def = defineSequence({ name: `rel-${randomUUID()}`, audit: true }, new Date());
  await rig.store.createSequence(def);
  // Every clock reading is 2 s later: the issuing loop beats before each request.
  let t = Date.now();
  const { d, allocator } = rig.dispenser({ clock: () => (t += 2000) });

  // The partition goes elsewhere mid-batch: the heartbeat fails after the first request took 3 numbers.
  let beats = 0;
  const losing = async () => {
    if (++beats > 1) throw new Error("The group is rebalancing, so a rejoin is needed");
  };
  await expect(d.answer(0, [ask(def.name, 3, "a"), ask(def.name, 2, "b")], losing)).rejects.toThrow(/rebalancing/);
  const first = await d.answer(0, [ask(def.name, 1, "c")], beat); // above the abandoned batch's numbers
  const retried = await d.answer(0, [ask(def.name, 4, "c"), ask(def.name, 1, "d")], beat); // c again: its 4 new numbers are never sent
  expect(retried[0]?.ranges).toEqual(first[0]?.ranges);
  await allocator.close(); // appends the grants and releases; the rest of the block is released as stopped

  const gaps: CounterGap[] = [];
  const r = await audit(rig.store, { sequence: def.name, settleMs: 0, onGap: (g) => void gaps.push(g) });
  expect(r.explained).toBe(true);
  const why = (g: CounterGap) => g.evidence?.slice(g.evidence.indexOf(": ") + 2);
  expect(gaps.map((g) => [g.first, g.last, g.reason, why(g)])).toEqual([
    [1n, 3n, "given-up", "batch-abandoned"],
    [5n, 8n, "given-up", "retry-replaced"],
  ]);
  expect(r.givenUpWhy).toEqual({ "batch-abandoned": 3n, "retry-replaced": 4n });
});

test("a block whose grant is written but whose checks fail (Redis failing over) is released, never lost", async () => {
  const def = defineSequence({ name: `rel-${randomUUID()}`, audit: true }, new Date());
  await rig.store.createSequence(def);
  const { d, allocator } = rig.dispenser();
  // The epoch check after the grant's write meets a connection that just closed (seen in the
  // cluster chaos profile: a Sentinel primary killed 40 ms after a claim): once.
  const hget = rig.redis.hget.bind(rig.redis);
  let failed = 0;
  rig.redis.hget = ((key: string, field: string) => {
    if (field === "epoch" && failed++ === 0) return Promise.reject(new Error("Connection is closed."));
    return hget(key, field);
  }) as typeof rig.redis.hget;
  try {
    const [refused] = await d.answer(0, [ask(def.name, 2, "a")], beat);
    expect(refused?.status).toBe("ERROR");
  } finally {
    rig.redis.hget = hget;
  }
  expect(failed).toBe(1);
  await allocator.close();
  // Another worker answers above the block, so the block lies inside the series the audit walks.
  const next = rig.dispenser();
  const [answered] = await next.d.answer(0, [ask(def.name, 1, "b")], beat);
  expect(answered?.status).toBe("OK");
  await next.allocator.close();

  const gaps: CounterGap[] = [];
  const r = await audit(rig.store, { sequence: def.name, settleMs: 0, onGap: (g) => void gaps.push(g) });
  expect(r.explained).toBe(true);
  const why = (g: CounterGap) => g.evidence?.slice(g.evidence.indexOf(": ") + 2);
  expect(gaps.map((g) => [g.reason, why(g)])).toContainEqual(["given-up", "claim-unused"]);
  expect(Object.keys(r.givenUpWhy)).not.toContain("no release recorded: its worker died (or could not append its log)");
});
