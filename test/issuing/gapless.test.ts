/**
 * Gapless numbering through dispensers on the real Redis and MongoDB (FerretDB on the stack): numbers
 * come from MongoDB, one document each, with no hole and no duplicate also when two writers race
 * (a zombie owner); retries get their numbers back from MongoDB after the Redis dedupe window;
 * CONFIRM and VOID settle with stable codes; the sweep voids what expired, reason `expired`.
 */
import { randomUUID } from "node:crypto";
import pino from "pino";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { Instrumentation } from "../../src/core/events.js";
import { GaplessSweep } from "../../src/issuing/sources/gapless/gapless-sweep.js";
import type { IdReply } from "../../src/protocol/reply.js";
import type { IdRequest, Settle } from "../../src/protocol/request.js";
import { defineSequence, type SequenceInput } from "../../src/sequences/definition.js";
import { beat, DispenserRig, numbersOf, request } from "../support/dispenser-rig.js";

const rig = new DispenserRig(inject("services"), "gapless");
let now = Date.parse("2026-11-21T10:00:00Z");
const clock = () => now;
/**
 * MongoDB's time as far off as the test's clock is off the real one: `expiresAt` is reckoned from
 * MongoDB's time, so a test that sets `now` back issues numbers that long ago with this.
 */
const mongoAsClock = async () => (await rig.store.serverNow()) + (now - Date.now());

beforeAll(async () => {
  await rig.store.ensureIndexes();
});
afterAll(() => rig.close());

async function define(input: Omit<SequenceInput, "name">): Promise<string> {
  const name = `gl-${randomUUID().slice(0, 8)}`;
  await rig.store.createSequence(defineSequence({ name, gapless: true, ...input }, new Date(now)));
  return name;
}

const settle = (sequence: string, s: Partial<Settle> & Pick<Settle, "action" | "numbers">): IdRequest =>
  request(sequence, 1, randomUUID(), { settle: { reason: null, period: null, ...s } });

const codes = (replies: IdReply[]) => replies.map((r) => r.error?.code ?? "OK");

/** Every number of the replies must be exactly [first, last]: no hole, no duplicate. */
function expectExactly(numbers: bigint[], first: bigint, last: bigint): void {
  const sorted = [...numbers].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  expect(new Set(sorted).size).toBe(sorted.length);
  expect(sorted[0]).toBe(first);
  expect(sorted.at(-1)).toBe(last);
  expect(BigInt(sorted.length)).toBe(last - first + 1n);
}

test("a step's requests take consecutive numbers from MongoDB, one document each, pending until settled", async () => {
  const name = await define({ start: 100 });
  const { d } = rig.dispenser({ clock, topic: `t-${randomUUID()}` });
  const before = await rig.store.serverTime();
  const replies = await d.answer(0, [request(name, 3), request(name, 1), request(name, 2)], beat);
  const after = await rig.store.serverTime();
  expect(codes(replies)).toEqual(["OK", "OK", "OK"]);
  expect(numbersOf(replies)).toEqual([100n, 101n, 102n, 103n, 104n, 105n]);
  const again = await d.answer(0, [request(name, 2)], beat);
  expect(numbersOf(again)).toEqual([106n, 107n]);
  const rows = await rig.queries.gaplessOf(name);
  expect(rows.map((r) => r.number)).toEqual([100n, 101n, 102n, 103n, 104n, 105n, 106n, 107n]);
  expect(new Set(rows.map((r) => r.state))).toEqual(new Set(["pending"]));
  // The default confirm timeout, 10 minutes, from MongoDB's time at the issue (not the test's clock, a day ahead).
  expect(rows[0]?.expiresAt.getTime()).toBeGreaterThanOrEqual(before + 600_000);
  expect(rows[0]?.expiresAt.getTime()).toBeLessThanOrEqual(after + 600_000 + 1000);
  expect(rows[0]?.requestId).toBe(replies[0]?.requestId);
});

test("two writers racing for one counter (a zombie owner): no number twice, no hole", async () => {
  const name = await define({});
  // Different topics, each writer its own gen. Each raises the sequence's fence once, in turn, before
  // the race, as zombies that have not yet learnt they lost their partition: then all insert at once
  // (the MongoDB race), and only the latest gen's answers are recorded and published; the others are
  // fenced at recording (WORKER_FENCED: nothing of their batch goes out).
  const writers = [0, 1, 2].map(() => rig.dispenser({ clock, topic: `t-${randomUUID()}` }).d);
  const all: IdReply[] = [];
  let fenced = 0;
  const answer = async (d: (typeof writers)[number], i: number) => {
    try {
      all.push(...(await d.answer(0, [request(name, 1 + (i % 3)), request(name, 2)], beat)));
    } catch (e) {
      if ((e as { code?: string }).code !== "WORKER_FENCED") throw e;
      fenced++;
    }
  };
  for (const d of writers) await answer(d, 0);
  await Promise.all(
    writers.map(async (d) => {
      for (let i = 1; i < 15; i++) await answer(d, i);
    }),
  );
  expect(fenced).toBeGreaterThan(0); // the earlier gens' batches
  const ok = all.filter((r) => r.status === "OK");
  // A writer that loses the race 5 times in a row answers UNAVAILABLE; its numbers taken in part stay pending.
  expect(all.filter((r) => r.status !== "OK").every((r) => r.error?.code === "UNAVAILABLE")).toBe(true);
  const answered = numbersOf(ok);
  expect(new Set(answered).size).toBe(answered.length);
  const rows = await rig.queries.gaplessOf(name);
  expectExactly(
    rows.map((r) => r.number),
    1n,
    BigInt(rows.length),
  );
  const inRows = new Set(rows.map((r) => r.number));
  expect(answered.every((n) => inRows.has(n))).toBe(true);
});

test("a retry after the Redis dedupe window gets its numbers back from MongoDB; a requestId twice in a step once", async () => {
  const name = await define({});
  const { d } = rig.dispenser({ clock, dedupeWindowMs: 0 });
  const id = randomUUID();
  const first = await d.answer(0, [request(name, 3, id)], beat);
  const again = await d.answer(0, [request(name, 3, id), request(name, 1)], beat);
  expect(numbersOf(again.slice(0, 1))).toEqual(numbersOf(first));
  // The retry was given 4..6 before its first answer was found: they are voided at once, and say why.
  expect(numbersOf(again.slice(1))).toEqual([7n]);
  const twice = randomUUID();
  const both = await d.answer(0, [request(name, 2, twice), request(name, 2, twice)], beat);
  expect(numbersOf(both)).toEqual([8n, 9n, 8n, 9n]);
  // Another worker (the next owner) answers the same retry the same way.
  const other = rig.dispenser({ clock, dedupeWindowMs: 0 }).d;
  expect(numbersOf(await other.answer(0, [request(name, 3, id)], beat))).toEqual([1n, 2n, 3n]);
  const rows = await rig.queries.gaplessOf(name);
  expect(rows.map((r) => r.number)).toEqual(Array.from({ length: 12 }, (_, i) => BigInt(i + 1)));
  const retried = rows.filter((r) => r.state === "voided").map((r) => r.number);
  expect(retried).toEqual([4n, 5n, 6n, 10n, 11n, 12n]);
  expect(rows.find((r) => r.number === 4n)?.reason).toBe(`a retry of request ${id}, answered with its first numbers`);
});

test("CONFIRM and VOID: settled once, idempotent, refused with stable codes, counted and swept", async () => {
  const name = await define({ confirmTimeout: "5s" });
  now = Date.now() - 4000; // issued 4 s ago on MongoDB's clock (the sweep's): these expire in 1 s
  const plain = `plain-${randomUUID().slice(0, 8)}`;
  await rig.store.createSequence(defineSequence({ name: plain }, new Date(now)));
  const { d } = rig.dispenser({ clock, serverNow: mongoAsClock });
  expect(numbersOf(await d.answer(0, [request(name, 10)], beat))).toEqual([1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n, 10n]);
  const settled = await d.answer(
    0,
    [
      settle(name, { action: "CONFIRM", numbers: [1n, 2n, 2n] }),
      settle(name, { action: "VOID", numbers: [3n], reason: "customer cancelled" }),
      settle(name, { action: "CONFIRM", numbers: [1n] }), // twice: idempotent
      settle(name, { action: "VOID", numbers: [1n], reason: "too late" }), // confirmed: cannot be voided
      settle(name, { action: "CONFIRM", numbers: [3n] }), // voided: cannot be confirmed
      settle(name, { action: "CONFIRM", numbers: [11n, 4n] }), // 11 never issued: nothing settled, not even 4
      settle(name, { action: "CONFIRM", numbers: [4n], period: "20261121" }), // this sequence has no periods
      settle(plain, { action: "CONFIRM", numbers: [1n] }),
    ],
    beat,
  );
  expect(codes(settled)).toEqual([
    "OK",
    "OK",
    "OK",
    "GAPLESS_NOT_PENDING",
    "GAPLESS_NOT_PENDING",
    "GAPLESS_NOT_PENDING",
    "BAD_REQUEST",
    "NOT_GAPLESS",
  ]);
  expect(settled[0]?.ranges).toEqual([{ first: 1n, last: 2n }]);
  expect(settled[5]?.error?.message).toMatch(/11 \(never issued\)/);
  let rows = await rig.queries.gaplessOf(name);
  expect(rows.map((r) => r.state)).toEqual(["confirmed", "confirmed", "voided", ...Array(7).fill("pending")]);
  expect(rows[2]?.reason).toBe("customer cancelled");

  // The sweep: nothing expired yet; then, past the 5 s timeout, 4..10 are voided as expired, once.
  const events = new Instrumentation();
  const expired: number[] = [];
  const counts: unknown[] = [];
  events.on("gapless.expired", (e) => e.sequence === name && expired.push(e.numbers));
  events.on("gapless.counts", (e) => counts.push(...e.counts.filter((c) => c.sequence === name)));
  const sweeps = [0, 1].map(
    (i) =>
      new GaplessSweep({ store: rig.store, worker: `sweeper-${i}`, everyMs: 60_000, clock, events, logger: pino({ level: "silent" }) }),
  );
  await sweeps[0]?.run();
  expect(expired).toEqual([]);
  await new Promise((r) => setTimeout(r, Math.max(0, now + 5100 - Date.now())));
  now = Date.now();
  await d.answer(0, [settle(name, { action: "CONFIRM", numbers: [4n] })], beat); // pending past its time but not swept yet: still confirmed
  counts.length = 0;
  await Promise.all(sweeps.map((s) => s.run())); // two workers at once: each number voided once
  expect(expired.reduce((a, b) => a + b, 0)).toBe(6);
  rows = await rig.queries.gaplessOf(name);
  expect(rows.slice(4).every((r) => r.state === "voided" && r.reason === "expired" && r.settledAt !== null)).toBe(true);
  expect(counts).toContainEqual({ sequence: name, state: "voided", numbers: 7 });
  expect(counts).toContainEqual({ sequence: name, state: "confirmed", numbers: 3 });
  const late = await d.answer(0, [settle(name, { action: "CONFIRM", numbers: [5n] })], beat);
  expect(late[0]?.error?.code).toBe("GAPLESS_NOT_PENDING");
  expect(late[0]?.error?.message).toMatch(/5 \(voided: expired\)/);
});

test("a periodic gapless sequence restarts each period; CONFIRM names the period", async () => {
  const name = await define({ kind: "daily", timeZone: "UTC", start: 1 });
  const { d } = rig.dispenser({ clock });
  const a = await d.answer(0, [request(name, 2)], beat);
  now += 86_400_000;
  const b = await d.answer(0, [request(name, 2)], beat);
  expect(numbersOf([...a, ...b])).toEqual([1n, 2n, 1n, 2n]);
  expect(a[0]?.period).not.toBe(b[0]?.period);
  const period = a[0]?.period as string;
  const r = await d.answer(
    0,
    [settle(name, { action: "CONFIRM", numbers: [1n, 2n], period }), settle(name, { action: "CONFIRM", numbers: [1n] })],
    beat,
  );
  expect(codes(r)).toEqual(["OK", "BAD_REQUEST"]);
  expect(r[0]?.period).toBe(period);
});

test("gapless definitions: for monotonic, daily and formatted; refused for obfuscated, snowflake, and as a switch", () => {
  const at = new Date();
  expect(defineSequence({ name: "a", gapless: true }, at).gapless).toEqual({ confirmTimeoutMs: 600_000 });
  expect(defineSequence({ name: "a", gapless: true, confirmTimeout: "90s" }, at).gapless).toEqual({ confirmTimeoutMs: 90_000 });
  const inv = defineSequence({ name: "inv", kind: "formatted", format: "INV-{yyyy}-{seq:6}", gapless: true }, at);
  expect(inv.gapless).not.toBeNull();
  for (const bad of [
    { name: "o", kind: "obfuscated", gapless: true },
    { name: "s", kind: "snowflake", gapless: true },
    { name: "f", kind: "formatted", format: "{obf:10}", keyVersion: 1, gapless: true },
    { name: "t", confirmTimeout: "10m" },
    { name: "t", gapless: true, confirmTimeout: "soon" },
  ])
    expect(() => defineSequence(bad, at), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: "SEQUENCE_INVALID" }));
  const plain = defineSequence({ name: "p" }, at);
  expect(() => defineSequence({ name: "p", gapless: true }, at, plain)).toThrow(/cannot be switched on/);
  expect(() => defineSequence({ name: "inv", gapless: false }, at, inv)).toThrow(/cannot be switched off/);
  expect(defineSequence({ name: "inv", confirmTimeout: "1h" }, at, inv).gapless).toEqual({ confirmTimeoutMs: 3_600_000 });
});

test("CONFIRMs racing two sweeps: each number settled once, and a confirmed reply means a confirmed number", async () => {
  const name = await define({ confirmTimeout: "1s" });
  now = Date.now() - 2000; // issued 2 s ago: all expired, none swept yet
  const { d } = rig.dispenser({ clock, serverNow: mongoAsClock });
  const taken = numbersOf(await d.answer(0, [request(name, 40)], beat));
  now = Date.now();
  const sweeps = [0, 1].map(
    (i) =>
      new GaplessSweep({
        store: rig.store,
        worker: `racer-${i}`,
        everyMs: 60_000,
        clock,
        events: new Instrumentation(),
        logger: pino({ level: "silent" }),
      }),
  );
  const confirmers = [0, 1, 2, 3].map(() => rig.dispenser({ clock, topic: `t-${randomUUID()}` }).d);
  const replies = new Map<bigint, IdReply>();
  await Promise.all([
    ...sweeps.map((s) => s.run()),
    ...confirmers.map(async (c, i) => {
      for (const n of taken.filter((_, k) => k % 4 === i)) {
        const [r] = await c.answer(0, [settle(name, { action: "CONFIRM", numbers: [n] })], beat);
        replies.set(n, r as IdReply);
      }
    }),
  ]);
  await sweeps[0]?.run(); // repairs a copy a racing CONFIRM had not made yet
  const rows = await rig.queries.gaplessOf(name);
  expect(rows.map((r) => r.number)).toEqual(taken);
  for (const row of rows) {
    const code = replies.get(row.number)?.error?.code ?? "OK";
    expect([row.number, code, row.state]).toEqual([row.number, code, code === "OK" ? "confirmed" : "voided"]);
    if (row.state === "voided") expect(row.reason).toBe("expired");
  }
});

test("only the sweep that leads (request partition 0's owner) voids and counts; one that stops leading says so", async () => {
  const name = await define({ confirmTimeout: "5s" });
  now = Date.now() - 6000; // issued 6 s ago: all three past their timeout
  const { d } = rig.dispenser({ clock, topic: `t-${randomUUID()}`, serverNow: mongoAsClock });
  await d.answer(0, [request(name, 3)], beat);
  now = Date.now();
  const events = new Instrumentation();
  const expired: number[] = [];
  const counted: { counting: boolean; mine: number }[] = [];
  events.on("gapless.expired", (e) => e.sequence === name && expired.push(e.numbers));
  events.on("gapless.counts", (e) =>
    counted.push({ counting: e.counting ?? true, mine: e.counts.filter((c) => c.sequence === name).length }),
  );
  const sweep = new GaplessSweep({
    store: rig.store,
    worker: "follower",
    everyMs: 60_000,
    clock,
    events,
    logger: pino({ level: "silent" }),
  });
  sweep.lead(false);
  expect(counted).toEqual([{ counting: false, mine: 0 }]); // its last counts are not current any more
  await sweep.run();
  expect(expired).toEqual([]);
  expect((await rig.queries.gaplessOf(name)).map((r) => r.state)).toEqual(["pending", "pending", "pending"]);
  sweep.lead(true); // it now owns partition 0: it sweeps at once
  await sweep.run();
  expect(expired).toEqual([3]);
  expect(counted.at(-1)).toEqual({ counting: true, mine: 1 });
  expect((await rig.queries.gaplessOf(name)).map((r) => r.reason)).toEqual(["expired", "expired", "expired"]);
});

const sweeper = (worker: string, sweepClock: () => number, events = new Instrumentation()) =>
  new GaplessSweep({ store: rig.store, worker, everyMs: 60_000, clock: sweepClock, events, logger: pino({ level: "silent" }) });

test("a VOID of a number the sweep expired is refused: the client is not told its reason stands", async () => {
  const name = await define({ confirmTimeout: "1s" });
  now = Date.now() - 5000; // issued 5 s ago: expired for every clock in the test
  const { d } = rig.dispenser({ clock, topic: `t-${randomUUID()}`, serverNow: mongoAsClock });
  expect(numbersOf(await d.answer(0, [request(name, 3)], beat))).toEqual([1n, 2n, 3n]);
  now = Date.now();
  const voided = await d.answer(0, [settle(name, { action: "VOID", numbers: [2n], reason: "order 7 cancelled" })], beat);
  expect(codes(voided)).toEqual(["OK"]); // settled before the sweep: its reason stands
  await sweeper("sweeper", Date.now).run(); // 1 and 3 expire
  const r = await d.answer(
    0,
    [
      settle(name, { action: "VOID", numbers: [1n], reason: "order 6 cancelled" }), // expired: not the client's void
      settle(name, { action: "VOID", numbers: [2n], reason: "order 7 cancelled" }), // the same VOID again: once
      settle(name, { action: "VOID", numbers: [2n], reason: "another reason" }), // voided, with another reason
      settle(name, { action: "CONFIRM", numbers: [3n] }),
    ],
    beat,
  );
  expect(codes(r)).toEqual(["GAPLESS_NOT_PENDING", "OK", "GAPLESS_NOT_PENDING", "GAPLESS_NOT_PENDING"]);
  expect(r[0]?.error?.message).toMatch(/1 \(voided: expired\)/);
  expect(r[2]?.error?.message).toMatch(/2 \(voided: order 7 cancelled\)/);
  expect((await rig.queries.gaplessOf(name)).map((n) => n.reason)).toEqual(["expired", "order 7 cancelled", "expired"]);
});

test("a sweeper whose clock is an hour ahead expires nothing early; one an hour behind still expires on time", async () => {
  const name = await define({ confirmTimeout: "5m" });
  now = Date.now();
  const { d } = rig.dispenser({ clock, topic: `t-${randomUUID()}`, serverNow: mongoAsClock });
  expect(numbersOf(await d.answer(0, [request(name, 2)], beat))).toEqual([1n, 2n]);
  const expired: number[] = [];
  const events = new Instrumentation();
  events.on("gapless.expired", (e) => e.sequence === name && expired.push(e.numbers));
  await sweeper("ahead", () => Date.now() + 3_600_000, events).run();
  expect(expired).toEqual([]);
  expect((await rig.queries.gaplessOf(name)).map((n) => n.state)).toEqual(["pending", "pending"]);
  // Issued (by a right clock) 6 minutes ago: past its 5 minutes, whatever the sweeper's own clock says.
  now = Date.now() - 360_000;
  expect(numbersOf(await d.answer(0, [request(name, 1)], beat))).toEqual([3n]);
  await sweeper("behind", () => Date.now() - 3_600_000, events).run();
  expect(expired).toEqual([1]);
  expect((await rig.queries.gaplessOf(name)).map((n) => n.state)).toEqual(["pending", "pending", "voided"]);
});

test("a worker whose clock is stepped back an hour writes expiresAt on MongoDB's time: its numbers keep their whole confirm timeout", async () => {
  const name = await define({ confirmTimeout: "5m" });
  let back = 0;
  const { d } = rig.dispenser({ clock: () => Date.now() - back, topic: `t-${randomUUID()}` });
  expect(numbersOf(await d.answer(0, [request(name, 1)], beat))).toEqual([1n]);
  back = 3_600_000; // NTP steps it back an hour (the monotonic clock runs on)
  const before = await rig.store.serverTime();
  expect(numbersOf(await d.answer(0, [request(name, 2)], beat))).toEqual([2n, 3n]);
  const after = await rig.store.serverTime();
  for (const row of (await rig.queries.gaplessOf(name)).filter((r) => r.number > 1n)) {
    // Before the fix: the worker's clock, an hour behind, so 55 minutes before MongoDB's time.
    expect(row.expiresAt.getTime(), `${row.number}`).toBeGreaterThanOrEqual(before + 300_000);
    expect(row.expiresAt.getTime(), `${row.number}`).toBeLessThanOrEqual(after + 300_000 + 1000);
  }
  await sweeper("sweeper", Date.now).run(); // on MongoDB's time: nothing expired
  expect((await rig.queries.gaplessOf(name)).map((n) => n.state)).toEqual(["pending", "pending", "pending"]);
  const r = await d.answer(0, [settle(name, { action: "CONFIRM", numbers: [2n, 3n] })], beat);
  expect(codes(r)).toEqual(["OK"]);
});
