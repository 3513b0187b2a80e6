/**
 * Formatted sequences through the dispenser, on real Redis and MongoDB, with an injected clock:
 * values printed by the template in the sequence's zone, restarting at a month end and a year end
 * of a non-UTC zone without an old period's value ever coming back, check digits that validate,
 * retries printed as first issued, bad fields refused before any number is spent, the serial
 * width capping the counter, and large counts answered with ranges only.
 */
import { randomUUID } from "node:crypto";
import { afterAll, expect, inject, test } from "vitest";
import type { IdReply } from "../../src/protocol/reply.js";
import type { IdRequest } from "../../src/protocol/request.js";
import { checkAlgorithm } from "../../src/sequences/check-digits.js";
import { defineSequence, type SequenceInput } from "../../src/sequences/definition.js";
import { beat, DispenserRig, request } from "../support/dispenser-rig.js";

let now = 0;
const clock = () => now;
const rig = new DispenserRig(inject("services"), "fmt");
const store = rig.store;
const { d: dispenser } = rig.dispenser({ clock, dedupeWindowMs: 600_000, maxFormatted: 100 });
afterAll(() => rig.close());

async function sequence(input: Omit<SequenceInput, "name">) {
  const def = defineSequence({ name: `fmt-${randomUUID()}`, kind: "formatted", ...input }, new Date());
  await store.createSequence(def);
  return def;
}
let ids = 0;
const ask = (sequence: string, count = 1, fields: Record<string, string> = {}, requestId = `r${++ids}`): IdRequest =>
  request(sequence, count, requestId, { fields });
const answer = async (...requests: IdRequest[]): Promise<IdReply[]> => dispenser.answer(0, requests, beat);
const at = (iso: string) => {
  now = Date.parse(iso);
};

test("a monthly invoice number in Asia/Shanghai restarts at the zone's month end; old values never return; damm checks validate", async () => {
  const def = await sequence({ format: "INV-{yyyy}{MM}-{seq:4}{check:damm}", timeZone: "Asia/Shanghai" });
  expect(def).toMatchObject({ period: "monthly", maxValue: 9999n });
  at("2026-11-30T15:59:59Z"); // 23:59:59 on 30 November in Shanghai
  const [nov] = await answer(ask(def.name, 3));
  expect(nov?.period).toBe("202611");
  const damm = checkAlgorithm("damm");
  expect(nov?.formatted.map((v) => v.slice(0, -1))).toEqual(["INV-202611-0001", "INV-202611-0002", "INV-202611-0003"]);
  for (const v of nov?.formatted ?? []) expect(damm.validate(v.replace(/\D/g, ""))).toBe(true);

  at("2026-11-30T16:00:00Z"); // midnight, 1 December in Shanghai: still 30 November in UTC
  const [dec] = await answer(ask(def.name, 2));
  expect(dec?.period).toBe("202612");
  expect(dec?.formatted.map((v) => v.slice(0, -1))).toEqual(["INV-202612-0001", "INV-202612-0002"]);

  // A worker whose clock is still in November continues November above what was issued (the rest
  // of its November block was given up when December began: a gap, never a repeat).
  at("2026-11-30T15:59:59.500Z");
  const [late] = await answer(ask(def.name, 1));
  expect(late?.formatted[0]).toMatch(/^INV-202611-\d{5}$/);
  expect(late?.ranges[0]?.first as bigint).toBeGreaterThan(3n);
  const all = [nov, dec, late].flatMap((r) => r?.formatted ?? []);
  expect(new Set(all).size).toBe(all.length);
});

test("a yearly number in America/New_York restarts at the zone's new year", async () => {
  const def = await sequence({ format: "{yyyy}-{seq:5}", timeZone: "America/New_York" });
  expect(def.period).toBe("yearly");
  at("2027-01-01T04:59:59Z"); // 23:59:59 on 31 December 2026 in New York
  expect((await answer(ask(def.name, 2)))[0]?.formatted).toEqual(["2026-00001", "2026-00002"]);
  at("2027-01-01T05:00:00Z");
  expect((await answer(ask(def.name, 1)))[0]?.formatted).toEqual(["2027-00001"]);
});

test("a retry after midnight gets the same numbers printed as first issued", async () => {
  const def = await sequence({ format: "{yyyy}{MM}{dd}{seq:5}", period: "never" });
  at("2026-11-23T23:59:59Z");
  const [first] = await answer(ask(def.name, 2, {}, "same"));
  at("2026-11-24T00:00:05Z");
  const [retry] = await answer(ask(def.name, 2, {}, "same"));
  expect(retry?.ranges).toEqual(first?.ranges);
  expect(retry?.formatted).toEqual(["2026112300001", "2026112300002"]);
  // Period never: no restart. The retry took 3 and 4 before its recorded answer was found: a gap (G4).
  expect((await answer(ask(def.name, 1)))[0]?.formatted).toEqual(["2026112400005"]);
});

test("fields are printed; bad fields are refused before a number is spent; unformatted sequences take none", async () => {
  const def = await sequence({ format: "{field:area:3}-{field:unit:4}-{seq:5}" });
  at("2026-11-23T12:00:00Z");
  const replies = await answer(
    ask(def.name, 1, { area: "010" }),
    ask(def.name, 1, { area: "010", unit: "6541", x: "1" }),
    ask(def.name, 1, { area: "01-", unit: "6541" }),
    ask(def.name, 1, { area: "010", unit: "6541" }),
  );
  expect(replies.map((r) => r.error?.code ?? r.formatted[0])).toEqual(["BAD_FIELDS", "BAD_FIELDS", "BAD_FIELDS", "010-6541-00001"]);
  const plain = defineSequence({ name: `plain-${randomUUID()}` }, new Date());
  await store.createSequence(plain);
  expect((await answer(ask(plain.name, 1, { area: "010" })))[0]?.error?.code).toBe("BAD_FIELDS");
  expect((await answer(ask(plain.name, 1)))[0]?.formatted).toEqual([]);
});

test("the serial width caps the counter (SEQUENCE_EXHAUSTED); counts above maxFormatted are answered in ranges only", async () => {
  const def = await sequence({ format: "QJ{seq:3}" });
  expect(def.maxValue).toBe(999n);
  const [big, rest, over] = await answer(ask(def.name, 101), ask(def.name, 898), ask(def.name, 1));
  expect(big).toMatchObject({ status: "OK", formatted: [], formattedOmitted: true, ranges: [{ first: 1n, last: 101n }] });
  expect(rest?.ranges.at(-1)?.last).toBe(999n);
  expect(over?.error?.code).toBe("SEQUENCE_EXHAUSTED");
  const wide = await sequence({ format: "QJ{seq:2}", overflow: "widen", start: 98 });
  expect((await answer(ask(wide.name, 3)))[0]?.formatted).toEqual(["QJ98", "QJ99", "QJ100"]);
});
