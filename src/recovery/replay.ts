/**
 * Replay: rebuilds Redis `cur`/`max` of every (sequence, period) counter — or of selected
 * sequences — from MongoDB's reservations and grants: the restore of src/issuing/sources/counter/restore.ts for
 * every counter MongoDB knows. Workers restore what they need by themselves (docs/design.md §5.11);
 * replay is the operator's tool where they refuse (STATE_CONFLICT: Redis ahead of MongoDB), and it
 * trusts the larger of both.
 *
 * 1. Read which counters MongoDB knows (reservations).
 * 2. Fence each one (I5): its epoch becomes a token no worker holds, so claims and raises fail with
 *    REDIS_FENCED until step 5, and no worker's own restore takes the fence over (REPLAY_FENCE); then wait `settleMs` so appends acknowledged before the fence are
 *    visible to reads (FerretDB was seen to miss a just-acknowledged record for a moment).
 * 3. Read reservations again, and the grants of strict sequences.
 * 4. Per counter: cur = the highest strict grant (I4, write-ahead) or else the reservation; never
 *    below what Redis still holds (I2). Record a reservation with max ≥ cur and the new epoch (I1).
 * 5. Restore Redis (restoreCounter: never lowers; marks the counter with the current node) and lift
 *    the fence with the new epoch.
 * Idempotent: running it again changes nothing but the epochs. `dryRun` reads and reports only.
 */
import { randomUUID } from "node:crypto";
import { IddError } from "../core/errors.js";
import { type Known, noteReservation, planRestore, type RestorePlan, STRICT_GRACE_MS } from "../issuing/sources/counter/restore.js";
import type { RedisClient } from "../redis/client-type.js";
import { counterKey } from "../redis/keys.js";
import { REPLAY_FENCE } from "../redis/script-args.js";
import { type CounterState, Scripts } from "../redis/scripts.js";
import type { SequenceDef } from "../sequences/definition.js";
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

export interface CounterPlan extends RestorePlan {
  key: string;
  sequence: string;
  period: string | null;
  before: CounterState;
}

export interface ReplayReport {
  counters: number;
  created: number;
  raised: number;
  unchanged: number;
  failed: { key: string; error: string }[];
  reservationRecords: number;
  grantRecords: number;
  ms: number;
  plans: CounterPlan[];
}

const BATCH = 1000;

export async function replay(redis: RedisClient, store: Store, o: ReplayOptions = {}): Promise<ReplayReport> {
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

  const token = `${REPLAY_FENCE}${randomUUID()}`;
  const states = new Map<string, CounterState>();
  for (let i = 0; i < keys.length; i += BATCH) {
    const batch = keys.slice(i, i + BATCH);
    const got = await Promise.all(
      batch.map(async (k) => {
        if (o.dryRun) {
          const [cur, m, epoch, node] = await redis.hmget(k, "cur", "max", "epoch", "node");
          return { cur: cur == null ? null : BigInt(cur), max: m == null ? null : BigInt(m), epoch: epoch ?? null, node: node ?? null };
        }
        const c = known.get(k) as Known;
        return scripts.fenceCounter({ sequence: c.sequence, period: c.period, token });
      }),
    );
    for (const [j, k] of batch.entries()) states.set(k, got[j] as CounterState);
  }
  if (!o.dryRun && keys.length > 0) {
    say(`fenced ${keys.length} counters; reading MongoDB again`);
    await new Promise((r) => setTimeout(r, o.settleMs ?? 500));
    known = await readMongo(store, defs, o, say, report, true);
  }

  const plans: CounterPlan[] = [];
  for (const key of keys) {
    const k = known.get(key) as Known;
    const before = states.get(key) as CounterState;
    plans.push({ key, sequence: k.sequence, period: k.period, before, ...planRestore(defs.get(k.sequence), k, before) });
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
        scripts
          .restoreCounter({ sequence: p.sequence, period: p.period, token, cur: p.cur, max: p.max, epoch: p.epoch })
          .catch((e: unknown) => {
            report.failed.push({ key: p.key, error: (e as Error).message });
          }),
      ),
    );
    say(`restored ${Math.min(i + BATCH, plans.length)}/${plans.length} counters`);
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
  const grace = o.strictGraceMs ?? STRICT_GRACE_MS;
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
    known.set(key, noteReservation(known.get(key), r, defs.get(r.sequence), grace));
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
