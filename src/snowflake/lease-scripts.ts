/**
 * The worker-id lease scripts (lua/acquireLease-2.lua, renewLease-2.lua, releaseLease-2.lua) as typed
 * calls. Register them with `defineScripts` (src/allocation/scripts.ts) like every script of lua/.
 */
import type { Redis, Result } from "ioredis";
import { scriptError } from "../allocation/scripts.js";
import { snowflakeLeaseKey, snowflakeLeasePrefix, snowflakeUntilKey } from "../redis/keys.js";

declare module "ioredis" {
  interface RedisCommander<Context> {
    acquireLease(
      untilKey: string,
      leasePrefix: string,
      token: string,
      ttlMs: number,
      ids: number,
      firstId: number,
      untilMs: number,
      acceptMs: number,
    ): Result<number | [number, string | null, number], Context>;
    renewLease(
      leaseKey: string,
      untilKey: string,
      token: string,
      ttlMs: number,
      workerId: number,
      untilMs: number,
    ): Result<number, Context>;
    releaseLease(leaseKey: string, untilKey: string, token: string, workerId: number, finalMs: string): Result<number, Context>;
  }
}

export interface AcquireArgs {
  sequence: string;
  token: string;
  ttlMs: number;
  /** 2^workerBits. */
  ids: number;
  /** The id tried first. */
  firstId: number;
  /** This holder's issued-until bound, Unix ms. */
  untilMs: number;
  /** Ids whose earlier bound is at most this are taken without looking further, Unix ms. */
  acceptMs: number;
}

/**
 * Leases a free worker id; its earlier issued-until bound is `floorMs` (null: never leased), `heldOff`
 * when that bound is the hold-off after Redis lost its state. Throws WORKER_IDS_EXHAUSTED.
 */
export async function acquireLease(redis: Redis, a: AcquireArgs): Promise<{ workerId: number; floorMs: number | null; heldOff: boolean }> {
  const until = snowflakeUntilKey(a.sequence);
  const r = await redis.acquireLease(until, snowflakeLeasePrefix(a.sequence), a.token, a.ttlMs, a.ids, a.firstId, a.untilMs, a.acceptMs);
  if (!Array.isArray(r)) throw scriptError("acquireLease", until, r);
  return { workerId: r[0], floorMs: r[1] === null ? null : Number(r[1]), heldOff: r[2] === 1 };
}

/** Renews a lease this token holds; throws LEASE_LOST when the key expired or another holder has it. */
export async function renewLease(redis: Redis, sequence: string, workerId: number, token: string, ttlMs: number, untilMs: number) {
  const key = snowflakeLeaseKey(sequence, workerId);
  const r = await redis.renewLease(key, snowflakeUntilKey(sequence), token, ttlMs, workerId, untilMs);
  if (r !== 1) throw scriptError("renewLease", key, r);
}

/** Frees a lease this token holds and sets the id's bound to `finalMs` (null: keep it); false when it was not held. */
export async function releaseLease(
  redis: Redis,
  sequence: string,
  workerId: number,
  token: string,
  finalMs: number | null,
): Promise<boolean> {
  const key = snowflakeLeaseKey(sequence, workerId);
  const r = await redis.releaseLease(key, snowflakeUntilKey(sequence), token, workerId, finalMs === null ? "" : String(finalMs));
  return r === 1;
}
