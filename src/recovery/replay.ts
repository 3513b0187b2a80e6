/**
 * Replay: rebuilds Redis `cur`/`max` of every (sequence, period) counter — or of selected
 * sequences — from MongoDB's reservations and grants, after Redis lost its state or to repair it.
 *
 * 1. Read which counters MongoDB knows (reservations).
 * 2. Fence each one (I5): its epoch becomes a token no worker holds, so claims and raises fail with
 *    REDIS_FENCED until step 5; then wait `settleMs` so appends acknowledged before the fence are
 *    visible to reads (FerretDB was seen to miss a just-acknowledged record for a moment).
 * 3. Read reservations again, and the grants of strict sequences.
 * 4. Per counter: cur = the highest strict grant (I4, write-ahead) or else the reservation; never
 *    below what Redis still holds (I2). Record a reservation with max ≥ cur and the new epoch (I1).
 * 5. Restore Redis (restoreCounter: never lowers) and lift the fence with the new epoch.
 * 6. A full replay writes the marker when Redis has none, which lets workers claim again (RedisState).
 * Idempotent: running it again changes nothing but the epochs. `dryRun` reads and reports only.
 */
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { IddError } from "../core/errors.js";
import { counterKey } from "../redis/keys.js";
import { hasMarker, writeMarker } from "../redis/marker.js";
import { type CounterState, Scripts } from "../redis/scripts.js";
import type { SequenceDef } from "../sequences/definition.js";
import { type InForce, inForce } from "../storage/reservation-in-force.js";
import type { Store } from "../storage/store.js";

export interface ReplayOptions {
  /** Only these sequences (every period); all when absent. */
  sequences?: string[];
  dryRun?: boolean;
  /** Wait after fencing before reading MongoDB (default 500 ms). */
  settleMs?: number;
  /** Reservations recorded up to this long after a switch to strict still count (default 60 s). */
  strictGraceMs?: number;
  progress?: (line: string) => void;
  /** Recorded as the `worker` of replay's reservation records. */
  actor?: string;
}

export interface CounterPlan {
  key: string;
  sequence: string;
  period: string | null;
  /** Where cur comes from: the highest write-ahead grant, or the reservation. */
  source: "grants" | "reservation";
  before: CounterState;
  cur: bigint;
  max: bigint;
  epoch: number;
  change: "create" | "raise" | "none";
}

export interface ReplayReport {
  counters: number;
  created: number;
  raised: number;
  unchanged: number;
  failed: { key: string; error: string }[];
  markerWritten: boolean;
  reservationRecords: number;
  grantRecords: number;
  ms: number;
  plans: CounterPlan[];
}

interface Known {
  sequence: string;
  period: string | null;
  /** The reservation in force: its max, and the epoch claims present. */
  reserved: InForce;
  /** Highest reservation recorded before the sequence became strict (plus grace). */
  reservedBeforeStrict: bigint;
  granted: bigint;
}

const BATCH = 1000;
const max = (...xs: (bigint | null | undefined)[]) => xs.reduce<bigint>((m, x) => (x != null && x > m ? x : m), -1n);

export async function replay(redis: Redis, store: Store, o: ReplayOptions = {}): Promise<ReplayReport> {
  const t0 = Date.now();
  const scripts = new Scripts(redis);
  const say = o.progress ?? (() => {});
  const defs = new Map((await store.listSequences()).map((d) => [d.name, d]));
  if (o.sequences) {
    const unknown = o.sequences.filter((s) => !defs.has(s));
    if (unknown.length > 0) throw new IddError("UNKNOWN_SEQUENCE", `no sequence named ${unknown.map((u) => `"${u}"`).join(", ")}`);
  }
  const report: ReplayReport = {
    counters: 0,
    created: 0,
    raised: 0,
    unchanged: 0,
    failed: [],
    markerWritten: false,
    reservationRecords: 0,
    grantRecords: 0,
    ms: 0,
    plans: [],
  };

  // First pass: which counters exist (reservations only; grants are read once, after fencing).
  let known = await readMongo(store, defs, o, say, report, o.dryRun === true);
  const keys = [...known.keys()];
  report.counters = keys.length;
  say(`${keys.length} counters in MongoDB${o.sequences ? ` for ${o.sequences.length} sequences` : ""}`);

  const token = `replay:${randomUUID()}`;
  const before = new Map<string, CounterState>();
  for (let i = 0; i < keys.length; i += BATCH) {
    const batch = keys.slice(i, i + BATCH);
    const states = await Promise.all(
      batch.map(async (k) => {
        if (o.dryRun) {
          const [cur, m, epoch] = await redis.hmget(k, "cur", "max", "epoch");
          return { cur: cur == null ? null : BigInt(cur), max: m == null ? null : BigInt(m), epoch: epoch ?? null };
        }
        return scripts.fenceCounter({ counter: k, token });
      }),
    );
    for (const [j, k] of batch.entries()) before.set(k, states[j] as CounterState);
  }
  if (!o.dryRun && keys.length > 0) {
    say(`fenced ${keys.length} counters; reading MongoDB again`);
    await new Promise((r) => setTimeout(r, o.settleMs ?? 500));
    known = await readMongo(store, defs, o, say, report, true);
  }

  const plans: CounterPlan[] = [];
  for (const key of keys) {
    const k = known.get(key) as Known;
    const def = defs.get(k.sequence);
    const b = before.get(key) as CounterState;
    const strict = def?.grantLog === "strict";
    const base = strict ? max(k.granted, k.reservedBeforeStrict, (def as SequenceDef).start - 1n) : k.reserved.max;
    const cur = max(base, b.cur);
    const top = max(k.reserved.max, b.max, cur);
    const priorEpoch = b.epoch !== null && /^\d+$/.test(b.epoch) ? Number(b.epoch) : 0;
    const change = b.cur === null || b.max === null ? "create" : cur > b.cur || top > b.max ? "raise" : "none";
    plans.push({
      key,
      sequence: k.sequence,
      period: k.period,
      source: strict ? "grants" : "reservation",
      before: b,
      cur,
      max: top,
      epoch: Math.max(k.reserved.epoch, priorEpoch) + 1,
      change,
    });
  }
  report.plans = plans;
  for (const p of plans) report[p.change === "create" ? "created" : p.change === "raise" ? "raised" : "unchanged"]++;
  if (o.dryRun) {
    report.ms = Date.now() - t0;
    return report;
  }

  for (let i = 0; i < plans.length; i += BATCH) {
    const batch = plans.slice(i, i + BATCH);
    // MongoDB first (I1): the new epoch and a reservation covering what Redis will hold.
    await store.appendReservations(
      batch.map((p) => ({ sequence: p.sequence, period: p.period, max: p.max, epoch: p.epoch, worker: o.actor ?? "replay" })),
    );
    await Promise.all(
      batch.map((p) =>
        scripts.restoreCounter({ counter: p.key, token, cur: p.cur, max: p.max, epoch: p.epoch }).catch((e: unknown) => {
          report.failed.push({ key: p.key, error: (e as Error).message });
        }),
      ),
    );
    say(`restored ${Math.min(i + BATCH, plans.length)}/${plans.length} counters`);
  }

  if (!o.sequences && report.failed.length === 0) {
    const missing = (await Promise.all(keys.map((k) => redis.exists(k)))).filter((n) => n === 0).length;
    if (missing > 0) {
      report.failed.push({ key: "*", error: `${missing} restored counters vanished: Redis lost its state again during replay` });
    } else {
      // With the time written: snowflake leases vanished with the data, their holders may issue until their local validity ends.
      report.markerWritten = await writeMarker(redis, "replay");
    }
  } else if (o.sequences && !(await hasMarker(redis))) {
    say("Redis has no idd marker: other sequences' counters may be lost too; run a full replay (without --sequence)");
  }
  report.ms = Date.now() - t0;
  return report;
}

async function readMongo(
  store: Store,
  defs: Map<string, SequenceDef>,
  o: ReplayOptions,
  say: (l: string) => void,
  report: ReplayReport,
  withGrants: boolean,
): Promise<Map<string, Known>> {
  const known = new Map<string, Known>();
  const grace = o.strictGraceMs ?? 60_000;
  let n = 0;
  let lastSay = Date.now();
  const tick = (what: string) => {
    if (Date.now() - lastSay > 2000) {
      say(`read ${n.toLocaleString("en")} ${what} records`);
      lastSay = Date.now();
    }
  };
  for await (const r of store.reservationRecords(o.sequences)) {
    n++;
    tick("reservation");
    const key = counterKey(r.sequence, r.period);
    let k = known.get(key);
    if (!k) {
      k = { sequence: r.sequence, period: r.period, reserved: inForce(undefined, r), reservedBeforeStrict: -1n, granted: -1n };
      known.set(key, k);
    } else k.reserved = inForce(k.reserved, r);
    const def = defs.get(r.sequence);
    // Relaxed grants may be missing from MongoDB, so a switch to strict trusts grants only afterwards.
    const switched = def && def.grantLogSince.getTime() > def.createdAt.getTime();
    if (switched && def.grantLog === "strict" && r.at.getTime() <= def.grantLogSince.getTime() + grace && r.max > k.reservedBeforeStrict)
      k.reservedBeforeStrict = r.max;
  }
  report.reservationRecords = n;
  if (!withGrants) return known;
  n = 0;
  const strict = [...defs.values()].filter((d) => d.grantLog === "strict" && (!o.sequences || o.sequences.includes(d.name)));
  for await (const g of store.grantEnds(new Set(strict.map((d) => d.name)))) {
    n++;
    tick("grant");
    const k = known.get(counterKey(g.sequence, g.period));
    if (k && g.last > k.granted) k.granted = g.last;
  }
  report.grantRecords = n;
  return known;
}
