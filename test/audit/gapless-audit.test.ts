/**
 * `idd audit` of a gapless sequence (issue #21): numbers issued through a real dispenser on the
 * stack's Redis and MongoDB, some confirmed, some voided with a reason, some left pending; the audit
 * walks the series from the sequence's start and explains every number. A number whose document is
 * deleted (a planted hole) makes it fail and name that number.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { audit, type CounterGap } from "../../src/audit/audit.js";
import type { IdRequest, Settle } from "../../src/protocol/request.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { beat, DispenserRig, numbersOf, request } from "../support/dispenser-rig.js";

const rig = new DispenserRig(inject("services"), "gapless-audit");
const clock = () => Date.now();

beforeAll(async () => {
  await rig.store.ensureIndexes();
});
afterAll(() => rig.close());

const settle = (sequence: string, s: Pick<Settle, "action" | "numbers"> & Partial<Settle>): IdRequest =>
  request(sequence, 1, randomUUID(), { settle: { reason: null, period: null, ...s } });

async function auditOf(sequence: string) {
  const gaps: CounterGap[] = [];
  const r = await audit(rig.store, { sequence, settleMs: 0, onGap: (g) => void gaps.push(g) });
  return { r, gaps: gaps.map((g) => `${g.first}..${g.last} ${g.reason}`) };
}

test("every number of a gapless series is confirmed, voided with its reason or pending; a deleted one is unexplained", async () => {
  const name = `gla-${randomUUID().slice(0, 8)}`;
  await rig.store.createSequence(defineSequence({ name, gapless: true, start: 10 }, new Date()));
  const { d } = rig.dispenser({ clock, topic: `t-${randomUUID()}` });
  const issued = numbersOf(await d.answer(0, [request(name, 4), request(name, 3), request(name, 3)], beat));
  expect(issued).toEqual([10n, 11n, 12n, 13n, 14n, 15n, 16n, 17n, 18n, 19n]);
  const replies = await d.answer(
    0,
    [
      settle(name, { action: "CONFIRM", numbers: [10n, 11n, 12n, 13n, 16n] }),
      settle(name, { action: "VOID", numbers: [14n, 15n], reason: "invoice cancelled" }),
      settle(name, { action: "VOID", numbers: [17n], reason: "printer jam" }),
    ],
    beat,
  );
  expect(replies.map((r) => r.error?.code ?? "OK")).toEqual(["OK", "OK", "OK"]);

  const { r, gaps } = await auditOf(name);
  expect(gaps).toEqual(["14..15 voided", "17..17 voided", "18..19 pending"]);
  expect(r).toMatchObject({ mode: "numbers", explained: true, unexplained: [] });
  expect(r.total).toMatchObject({ first: 10n, last: 19n, answered: 5n });

  // A hole planted in the log: the audit fails and names it.
  expect(await rig.queries.deleteGapless(`${name}/-/12`)).toBe(1);
  const holed = await auditOf(name);
  expect(holed.r.explained).toBe(false);
  expect(holed.r.unexplained.map((g) => `${g.first}..${g.last}`)).toEqual(["12..12"]);
  expect(holed.gaps).toContain("12..12 unexplained");
});
