/**
 * Obfuscated sequences through the dispenser, on real Redis and MongoDB: values unique, fixed
 * width, their first digit the key version, decoding back to the serials in issue order; a key
 * rotation never collides with earlier values; a retry gets the same values; a worker without the
 * sequence's key refuses before spending a number; the reply never shows a serial.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, expect, inject, test } from "vitest";
import type { IdReply } from "../../src/protocol/reply.js";
import { SequenceCache } from "../../src/sequences/cache.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { type ObfuscationKeys, parseObfuscationKeys } from "../../src/sequences/obfuscation/keys.js";
import { request as ask, DispenserRig } from "../support/dispenser-rig.js";

const rig = new DispenserRig(inject("services"), "obf");
const store = rig.store;
const keys = parseObfuscationKeys(`1:${randomBytes(32).toString("base64")},2:${randomBytes(16).toString("base64")}`, "test");
const sequences = new SequenceCache(store, { ttlMs: 0, clock: Date.now });
const dispenser = (obfuscation: ObfuscationKeys | undefined, topic = `obf-${randomUUID()}`) =>
  rig.dispenser({
    topic,
    sequences,
    maxFormatted: 1000,
    allocation: { maxBlock: 10_000, initialBlock: 500 },
    kinds: obfuscation ? { obfuscation } : {},
  }).d;
const values = (replies: IdReply[]) => replies.flatMap((r) => r.formatted);
afterAll(() => rig.close());

test("values are unique, fixed width, versioned, and decode to the serials in issue order; ranges never show a serial", async () => {
  const def = defineSequence({ name: `obf-${randomUUID()}`, kind: "obfuscated", digits: 9 }, new Date());
  expect(def).toMatchObject({ period: "never", start: 1n, maxValue: 99_999_999n, obfuscation: { digits: 9, keyVersion: 1 } });
  await store.createSequence(def);
  const d = dispenser(keys);
  const replies: IdReply[] = [];
  for (let i = 0; i < 20; i++)
    replies.push(
      ...(await d.answer(
        0,
        Array.from({ length: 50 }, () => ask(def.name, 1 + (i % 3))),
        async () => {},
      )),
    );
  const all = values(replies);
  expect(all).toHaveLength(replies.reduce((n, r) => n + r.formatted.length, 0));
  expect(new Set(all).size).toBe(all.length);
  for (const v of all) expect(v).toMatch(/^1\d{8}$/);
  for (const r of replies) expect(r.ranges.map((x) => String(x.first))).toEqual(r.formatted); // one range per value
  const domain = keys.domain({ sequence: def.name, digits: 9, currentVersion: 1 });
  const serials = all.map((v) => domain.decode(v).serial);
  expect(serials).toEqual(serials.map((_, i) => BigInt(i + 1))); // issue order, from start 1
  // Serials are not what clients see: none of the values is a small number.
  expect(replies.flatMap((r) => r.ranges).every((x) => x.first > 100_000_000n)).toBe(true);
});

test("a key rotation never collides with earlier values; a retry gets its values again; no key, no numbers spent", async () => {
  const def = defineSequence({ name: `rot-${randomUUID()}`, kind: "obfuscated", digits: 7 }, new Date());
  await store.createSequence(def);
  const d = dispenser(keys);
  const [first] = await d.answer(0, [ask(def.name, 500, "kept")], async () => {});
  const rotated = defineSequence({ name: def.name, keyVersion: 2 }, new Date(Date.now() + 1), def);
  await store.updateSequence(rotated);
  sequences.remember(rotated); // what the cache reads from MongoDB within IDD_SEQUENCE_CACHE_MS
  const [second] = await d.answer(0, [ask(def.name, 500)], async () => {});
  expect(second?.formatted.every((v) => v.startsWith("2"))).toBe(true);
  const both = [...(first?.formatted ?? []), ...(second?.formatted ?? [])];
  expect(new Set(both).size).toBe(1000);
  const [again] = await d.answer(0, [ask(def.name, 500, "kept")], async () => {});
  expect(again?.formatted).toEqual(first?.formatted); // the values as first issued, under key version 1
  const keyless = dispenser(undefined);
  const [refused] = await keyless.answer(0, [ask(def.name, 1)], async () => {});
  expect(refused?.error?.code).toBe("OBFUSCATION_KEY_MISSING");
  const onlyOne = dispenser(parseObfuscationKeys(`1:${randomBytes(16).toString("base64")}`, "one"));
  expect((await onlyOne.answer(0, [ask(def.name, 1)], async () => {}))[0]?.error?.code).toBe("OBFUSCATION_KEY_MISSING");
  const domain = keys.domain({ sequence: def.name, digits: 7, currentVersion: 2 });
  const serials = both.map((v) => domain.decode(v).serial);
  expect(serials).toEqual([...serials].sort((a, b) => (a < b ? -1 : 1))); // issue order across the rotation
  expect(domain.decode(first?.formatted[0] as string)).toEqual({ serial: 1n, version: 1 });
});

test("a count above IDD_MAX_FORMATTED is refused before any serial is spent (one value per number would not be bounded)", async () => {
  const def = defineSequence({ name: `big-${randomUUID()}`, kind: "obfuscated", digits: 9 }, new Date());
  await store.createSequence(def);
  const d = dispenser(keys);
  const [big, one] = await d.answer(0, [ask(def.name, 1001), ask(def.name, 1000)], async () => {});
  expect(big?.error?.code).toBe("INVALID_COUNT");
  const domain = keys.domain({ sequence: def.name, digits: 9, currentVersion: 1 });
  expect(domain.decode(one?.formatted[0] as string).serial).toBe(1n);
});

test("{obf:N} in a format: daily serials print obfuscated with the date and a check; unique across days; decode reads them back", async () => {
  let now = Date.parse("2026-11-23T10:00:00Z");
  const def = defineSequence(
    { name: `fobf-${randomUUID()}`, kind: "formatted", format: "{yyyy}{MM}{dd}-{obf:8}{check:damm}", keyVersion: 2 },
    new Date(now),
  );
  expect(def).toMatchObject({ period: "daily", maxValue: 9_999_999n, obfuscation: { digits: 8, keyVersion: 2 } });
  await store.createSequence(def);
  const d = rig.dispenser({ sequences, maxFormatted: 1000, kinds: { obfuscation: keys }, clock: () => now }).d;
  const day1 = values(await d.answer(0, [ask(def.name, 300), ask(def.name, 200)], async () => {}));
  now += 86_400_000;
  const day2 = values(await d.answer(0, [ask(def.name, 500)], async () => {}));
  for (const v of [...day1, ...day2]) expect(v).toMatch(/^2026112[34]-2\d{7}\d$/);
  expect(new Set([...day1, ...day2]).size).toBe(1000);
  // Each day restarts at serial 1, yet its first value is not the previous day's: the dates are in the tweak.
  expect(day1[0]?.slice(9)).not.toBe(day2[0]?.slice(9));
  const { decodeObfuscated } = await import("../../src/sequences/decode.js");
  expect(decodeObfuscated(def, keys, day1[0] as string)).toBe("serial=1 key-version=2 yyyy=2026 MM=11 dd=23");
  expect(decodeObfuscated(def, keys, day2[499] as string)).toBe("serial=500 key-version=2 yyyy=2026 MM=11 dd=24");
  const { checkAlgorithm } = await import("../../src/sequences/check-digits.js");
  for (const v of day2) expect(checkAlgorithm("damm").validate(v.replace(/\D/g, ""))).toBe(true);
  const typo = `${(day2[0] as string).slice(0, 10)}${((Number(day2[0]?.[10]) + 1) % 10).toString()}${day2[0]?.slice(11)}`;
  expect(() => decodeObfuscated(def, keys, typo)).toThrow(/OBFUSCATED_VALUE_INVALID|is not a value/);
  // Without the key: refused, as for obfuscated sequences.
  const keyless = rig.dispenser({ topic: `keyless-${randomUUID()}`, sequences, maxFormatted: 1000, clock: () => now }).d;
  expect((await keyless.answer(0, [ask(def.name, 1)], async () => {}))[0]?.error?.code).toBe("OBFUSCATION_KEY_MISSING");
});

test("{obf:N} in a format without dates (issue 17): decode gives the serials back, and the values are the name-tweaked ones issued before", async () => {
  const now = Date.parse("2026-11-23T10:00:00Z");
  const { decodeValue } = await import("../../src/sequences/decode.js");
  for (const format of ["{obf:10}{check:damm}", "X{obf:8}"]) {
    const def = defineSequence({ name: `fobf-${randomUUID()}`, kind: "formatted", format }, new Date(now));
    await store.createSequence(def);
    const d = rig.dispenser({ sequences, maxFormatted: 1000, kinds: { obfuscation: keys }, clock: () => now }).d;
    const issued = values(await d.answer(0, [ask(def.name, 3), ask(def.name, 2)], async () => {}));
    expect(issued.map((v) => decodeValue(def, v, keys).serial)).toEqual([1n, 2n, 3n, 4n, 5n]);
    // The tweak of a template without dates is the sequence name alone, as workers have always encoded them.
    const digits = def.obfuscation?.digits ?? 0;
    const plain = keys.domain({ sequence: def.name, digits, currentVersion: 1 }).encodeAll([1n, 2n, 3n, 4n, 5n]);
    expect(issued.map((v) => v.replace(/^X/, "").slice(0, digits))).toEqual(plain);
  }
});
