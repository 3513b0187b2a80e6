/**
 * Restoring a counter from MongoDB (docs/design.md §5.11, I4, I5): what `idd replay` does for many
 * counters and a worker does for the one it needs, when that counter is missing from Redis while
 * MongoDB holds a reservation for it, or suspect (written under another Redis node).
 *
 * 1. Fence the counter (its epoch becomes a token no worker holds; a worker fences only a counter
 *    still missing or suspect), then wait `settleMs` so appends acknowledged before the fence are
 *    visible to reads (FerretDB was seen to miss a just-acknowledged record for a moment).
 * 2. Read MongoDB: the reservation in force, and for a strict sequence its grants.
 * 3. cur = the highest strict grant (I4, write-ahead) or else the reservation; never below what Redis
 *    still holds (I2). max ≥ cur. A reservation with max and a new epoch is appended first (I1).
 * 4. restoreCounter: only if the fence is still ours; marks the counter with this node, lifts the fence.
 *
 * A worker refuses (STATE_CONFLICT) when Redis holds more than MongoDB's reservation: MongoDB lost
 * reservations, and only an operator can tell which side to trust (`idd replay` trusts the larger).
 */
import { randomUUID } from "node:crypto";
import { IddError } from "../../../core/errors.js";
import type { CounterState, Scripts } from "../../../redis/scripts.js";
import type { SequenceDef } from "../../../sequences/definition.js";
import { type InForce, inForce } from "../../../storage/reservation-in-force.js";
import type { Store } from "../../../storage/store.js";

/** What MongoDB knows of one counter. */
export interface Known {
  sequence: string;
  period: string | null;
  /** The reservation in force: its max, and the epoch claims present. */
  reserved: InForce;
  /** Highest reservation recorded before the sequence became strict (plus grace). */
  reservedBeforeStrict: bigint;
  /** The highest grant's last number (-1: none read). */
  granted: bigint;
}

/** Reservations recorded up to this long after a switch to strict still count (relaxed grants from before may be missing). */
export const STRICT_GRACE_MS = 60_000;

const max = (...xs: (bigint | null | undefined)[]) => xs.reduce<bigint>((m, x) => (x != null && x > m ? x : m), -1n);

/** Counts one reservation record into what is known of its counter (`k`: undefined for the first one). */
export function noteReservation(
  k: Known | undefined,
  r: { sequence: string; period: string | null; max: bigint; epoch: number; at: Date },
  def: SequenceDef | undefined,
  graceMs = STRICT_GRACE_MS,
): Known {
  const known = k ?? { sequence: r.sequence, period: r.period, reserved: inForce(undefined, r), reservedBeforeStrict: -1n, granted: -1n };
  if (k) known.reserved = inForce(k.reserved, r);
  // Relaxed grants may be missing from MongoDB, so a switch to strict trusts grants only afterwards.
  const switched = def && def.grantLogSince.getTime() > def.createdAt.getTime();
  if (
    switched &&
    def.grantLog === "strict" &&
    r.at.getTime() <= def.grantLogSince.getTime() + graceMs &&
    r.max > known.reservedBeforeStrict
  )
    known.reservedBeforeStrict = r.max;
  return known;
}

export interface RestorePlan {
  /** Where cur comes from: the highest write-ahead grant, or the reservation. */
  source: "grants" | "reservation";
  cur: bigint;
  max: bigint;
  epoch: number;
  change: "create" | "raise" | "none";
}

/** cur and max per I4 and I2, and the next epoch, for a counter Redis held as `b` before the fence. */
export function planRestore(def: SequenceDef | undefined, k: Known, b: CounterState): RestorePlan {
  const strict = def?.grantLog === "strict";
  const base = strict ? max(k.granted, k.reservedBeforeStrict, (def as SequenceDef).start - 1n) : k.reserved.max;
  const cur = max(base, b.cur);
  const top = max(k.reserved.max, b.max, cur);
  const priorEpoch = b.epoch !== null && /^\d+$/.test(b.epoch) ? Number(b.epoch) : 0;
  const change = b.cur === null || b.max === null ? "create" : cur > b.cur || top > b.max ? "raise" : "none";
  return { source: strict ? "grants" : "reservation", cur, max: top, epoch: Math.max(k.reserved.epoch, priorEpoch) + 1, change };
}

/** Redis ahead of MongoDB: the reservation in force does not cover what Redis holds (I1 broken). */
export function conflict(k: Known | undefined, b: CounterState): string | undefined {
  const reserved = k?.reserved.max ?? -1n;
  const ahead = max(b.cur, b.max);
  if (ahead > reserved)
    return `Redis holds ${ahead} but MongoDB's reservation in force is ${k ? reserved : "none"}: MongoDB lost reservations`;
  return undefined;
}

/**
 * Appends the restore's reservation under a new epoch (MongoDB first, I1), then reads again: a raise
 * or a strict grant under an older epoch (another worker's, on another Redis in a split brain) is
 * used only if its own check, made after it was written, saw no newer epoch, so every one that is
 * used is visible to this second read, which the plan is raised to. A newer epoch appended meanwhile
 * (a restore on another Redis) supersedes this plan: it is made again above that one.
 */
async function reserveForRestore(d: RestoreDeps, def: SequenceDef, k: Known, before: CounterState): Promise<RestorePlan> {
  const counter = { sequence: def.name, period: k.period };
  for (let round = 0; ; round++) {
    let plan = planRestore(def, k, before);
    await d.store.appendReservation({ ...counter, max: plan.max, epoch: plan.epoch, worker: d.worker });
    const again = (await known(d.store, def, k.period)) as Known;
    if (again.reserved.epoch > plan.epoch) {
      if (round >= 4) throw new IddError("REDIS_FENCED", `${def.name}: restores on other Redis nodes kept superseding this one`);
      k = again;
      continue;
    }
    const above = planRestore(def, again, before);
    if (above.cur > plan.cur || above.max > plan.max) {
      plan = { ...plan, cur: max(plan.cur, above.cur), max: max(plan.max, above.max) };
      await d.store.appendReservation({ ...counter, max: plan.max, epoch: plan.epoch, worker: d.worker });
    }
    return plan;
  }
}

/** What MongoDB knows of one counter: its reservations and, for a strict sequence, its grants. */
async function known(store: Store, def: SequenceDef, period: string | null): Promise<Known | undefined> {
  let k: Known | undefined;
  for await (const r of store.reservationRecords([def.name])) if (r.period === period) k = noteReservation(k, r, def);
  if (k && def.grantLog === "strict")
    for await (const g of store.grantEnds(new Set([def.name]))) if (g.period === period && g.last > k.granted) k.granted = g.last;
  return k;
}

export interface RestoreDeps {
  scripts: Scripts;
  store: Store;
  /** Recorded as the `worker` of the reservation record. */
  worker: string;
  /** Wait after fencing before reading MongoDB (default 200 ms). */
  settleMs?: number;
}

/**
 * A worker's restore of one counter it found missing (with a reservation in MongoDB) or suspect, or
 * (`staleEpoch`) still under an epoch MongoDB knows a restore on another Redis superseded.
 * Returns the epoch claims present from now on; undefined when another restore stood (the caller
 * claims again, re-reading the epoch). Throws STATE_CONFLICT when Redis is ahead of MongoDB.
 */
export async function restoreOne(
  d: RestoreDeps,
  def: SequenceDef,
  period: string | null,
  staleEpoch?: number,
): Promise<number | undefined> {
  const counter = { sequence: def.name, period };
  const token = `restore:${randomUUID()}`;
  const stale = staleEpoch === undefined ? {} : { orStaleEpoch: staleEpoch };
  const before = await d.scripts.fenceCounter({ ...counter, token, onlySuspect: true, ...stale });
  if (!before) return undefined; // restored meanwhile by another worker
  await new Promise((r) => setTimeout(r, d.settleMs ?? 200));
  const k = await known(d.store, def, period);
  const name = `${def.name}${period === null ? "" : ` period ${period}`}`;
  const why = conflict(k, before);
  if (why) throw new IddError("STATE_CONFLICT", `${name}: ${why}; run \`idd replay\` once MongoDB is known complete`);
  if (!k) throw new IddError("REDIS_STATE_MISSING", `${name}: missing from Redis, and MongoDB holds no reservation for it`);
  const plan = await reserveForRestore(d, def, k, before);
  try {
    await d.scripts.restoreCounter({ ...counter, token, cur: plan.cur, max: plan.max, epoch: plan.epoch });
  } catch (e) {
    if (e instanceof IddError && e.code === "REDIS_FENCED") return undefined; // another restore fenced it after us
    throw e;
  }
  return plan.epoch;
}
