/** The plan's checks, without any service: the order a reply reports them in, and the kinds' count caps. */
import { expect, test } from "vitest";
import type { IdRequest, Settle } from "../protocol/request.js";
import { defineSequence } from "../sequences/definition.js";
import { kindOf } from "../sequences/kinds/table.js";
import { planOf, refusedByKind, refusedEarly } from "./plan.js";

const now = Date.parse("2026-11-24T00:00:00Z");
const request = (more: Partial<IdRequest> = {}): IdRequest => ({
  requestId: "r",
  sequence: "s",
  count: 5,
  replyTo: null,
  deadline: null,
  fields: {},
  ...more,
});
const limits = { maxFormatted: 3 };

test("a passed deadline is reported before a hook's refusal; neither without cause", () => {
  expect(refusedEarly(request({ deadline: BigInt(now - 1) }), now, "no")?.code).toBe("DEADLINE_EXCEEDED");
  expect(refusedEarly(request({ deadline: BigInt(now) }), now, "no")?.code).toBe("HOOK_REFUSED");
  expect(refusedEarly(request(), now, undefined)).toBeUndefined();
});

test("the kind's refusal comes first; a kind printing a value per number caps the count at maxFormatted", () => {
  const plain = defineSequence({ name: "plain" }, new Date(now));
  const obf = defineSequence({ name: "obf", kind: "obfuscated" }, new Date(now));
  const fmt = defineSequence({ name: "fmt", kind: "formatted", format: "{seq:6}" }, new Date(now));
  expect(refusedByKind(kindOf(plain), plain, request({ count: 1000 }), {}, limits)).toBeUndefined();
  expect(refusedByKind(kindOf(plain), plain, request({ fields: { a: "1" } }), {}, limits)?.code).toBe("BAD_FIELDS");
  expect(refusedByKind(kindOf(fmt), fmt, request({ count: 1000 }), {}, limits)).toBeUndefined();
  // No obfuscation keys here: the kind's own refusal is reported before the cap.
  expect(refusedByKind(kindOf(obf), obf, request({ count: 1000 }), {}, limits)?.code).toBe("OBFUSCATION_KEY_MISSING");
  expect(kindOf(obf).maxCount?.(obf, limits)).toBe(3);
  expect(kindOf(fmt).maxCount?.(fmt, limits)).toBeUndefined();
  const fmtObf = defineSequence({ name: "fobf", kind: "formatted", format: "{obf:8}" }, new Date(now));
  expect(kindOf(fmtObf).maxCount?.(fmtObf, limits)).toBe(3);
});

test("the plan says where the numbers come from: the definition's source (a settle: gapless), or a refusal", () => {
  const daily = defineSequence({ name: "d", kind: "daily" }, new Date(now));
  const take = planOf(request(), daily, now, {}, limits);
  expect(take).toMatchObject({ is: "take", source: "counter", period: "20261124" });
  const snow = defineSequence({ name: "sf", kind: "snowflake" }, new Date(now));
  const flake = planOf(request(), snow, now, {}, limits);
  expect(flake).toMatchObject({ is: "take", source: "clock" });
  const gapless = defineSequence({ name: "g", kind: "daily", gapless: true }, new Date(now));
  expect(planOf(request(), gapless, now, {}, limits)).toMatchObject({ is: "take", source: "gapless", period: "20261124" });
  const settle: Settle = { action: "CONFIRM", numbers: [1n], reason: null, period: "20261123" };
  expect(planOf(request({ settle }), gapless, now, {}, limits)).toMatchObject({ is: "take", source: "gapless", period: "20261123" });
  // Any sequence's: the gapless source refuses it NOT_GAPLESS.
  expect(planOf(request({ settle }), daily, now, {}, limits)).toMatchObject({ is: "take", source: "gapless" });
  expect(planOf(request({ fields: { a: "1" } }), daily, now, {}, limits)).toMatchObject({ is: "refused", error: { code: "BAD_FIELDS" } });
});
