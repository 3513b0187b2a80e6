/**
 * The Redis seam: the Lua scripts in lua/ registered on an ioredis connection with defineCommand
 * (EVALSHA, falling back to EVAL), and their results turned into values or typed errors.
 * Script files are named `camelName-K.lua`, K being the number of KEYS the script takes, or
 * `camelName-n.lua` for a variable number (the caller passes it first).
 */
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Redis, Result } from "ioredis";
import { type ErrorCode, IddError } from "../errors.js";
import { PACKAGE_ROOT } from "../package-root.js";
import { MARKER_KEY } from "../redis/keys.js";

export const LUA_DIR = join(PACKAGE_ROOT, "lua");

declare module "ioredis" {
  interface RedisCommander<Context> {
    claimBlock(
      key: string,
      marker: string,
      size: number,
      epoch: string,
      markerValue: string,
      claimId: string,
    ): Result<number | [number, number, number], Context>;
    raiseMax(key: string, marker: string, max: string, epoch: string, markerValue: string): Result<number, Context>;
    initCounter(key: string, marker: string, cur: string, max: string, epoch: string, markerValue: string): Result<number, Context>;
    fenceCounter(key: string, token: string): Result<[string | null, string | null, string | null], Context>;
    restoreCounter(key: string, token: string, cur: string, max: string, epoch: string): Result<number | [number, number], Context>;
  }
}

/** Negative results scripts return, as listed in their headers. */
export enum ScriptCode {
  Missing = -1,
  Fenced = -2,
  Exhausted = -3,
  Exists = -4,
  Lost = -5,
  NoWorkerId = -6,
  LeaseLost = -7,
}

const CODE_ERRORS: Record<ScriptCode, { code: ErrorCode; retriable: boolean }> = {
  [ScriptCode.Missing]: { code: "REDIS_STATE_MISSING", retriable: false },
  [ScriptCode.Fenced]: { code: "REDIS_FENCED", retriable: true },
  [ScriptCode.Exhausted]: { code: "REDIS_EXHAUSTED", retriable: true },
  [ScriptCode.Exists]: { code: "REDIS_COUNTER_EXISTS", retriable: false },
  [ScriptCode.Lost]: { code: "REDIS_STATE_LOST", retriable: false },
  [ScriptCode.NoWorkerId]: { code: "WORKER_IDS_EXHAUSTED", retriable: true },
  [ScriptCode.LeaseLost]: { code: "LEASE_LOST", retriable: true },
};

export function scriptError(script: string, key: string, result: unknown): IddError {
  const known = typeof result === "number" ? CODE_ERRORS[result as ScriptCode] : undefined;
  if (!known) return new IddError("REDIS_SCRIPT_FAILED", `${script} on ${key} returned ${JSON.stringify(result)}`);
  return new IddError(known.code, `${script} on ${key}: ${known.code}`, { retriable: known.retriable });
}

export interface ScriptFile {
  name: string;
  numberOfKeys: number | undefined;
  lua: string;
}

export function readScripts(dir = LUA_DIR): ScriptFile[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".lua"))
    .map((f) => {
      const m = /^([a-z][A-Za-z]*)-(\d+|n)\.lua$/.exec(f);
      if (!m) throw new Error(`lua/${f}: script files are named camelName-K.lua (K = number of keys, or n)`);
      const numberOfKeys = m[2] === "n" ? undefined : Number(m[2]);
      return { name: m[1] as string, numberOfKeys, lua: readFileSync(join(dir, f), "utf8") };
    });
}

/** Registers every script of lua/ on `redis` (once per connection) and returns it. */
export function defineScripts(redis: Redis, scripts = readScripts()): Redis {
  for (const s of scripts)
    redis.defineCommand(s.name, { ...(s.numberOfKeys !== undefined && { numberOfKeys: s.numberOfKeys }), lua: s.lua });
  return redis;
}

export interface Block {
  first: bigint;
  last: bigint;
  /** The counter's max when the block was granted. */
  max: bigint;
}

/** Claims up to `size` numbers; throws a typed error for every negative script result. */
/**
 * Claims a block. `claimId` makes it safe to retry a claim whose answer never came (a timeout):
 * the same id gets the same block back, if the claim ran.
 */
export async function claimBlock(
  redis: Redis,
  key: string,
  size: number,
  epoch: string,
  marker: string,
  claimId: string = randomUUID(),
): Promise<Block> {
  const r = await redis.claimBlock(key, MARKER_KEY, size, epoch, marker, claimId);
  if (!Array.isArray(r)) throw scriptError("claimBlock", key, r);
  return { first: BigInt(r[0]), last: BigInt(r[1]), max: BigInt(r[2]) };
}

/** Raises the counter's max (never lowers it); returns the max in force. */
export async function raiseMax(redis: Redis, key: string, max: bigint, epoch: string, marker: string): Promise<bigint> {
  const r = await redis.raiseMax(key, MARKER_KEY, max.toString(), epoch, marker);
  if (r < 0) throw scriptError("raiseMax", key, r);
  return BigInt(r);
}

/** Creates a counter that does not exist; throws REDIS_COUNTER_EXISTS when it does. */
export async function initCounter(redis: Redis, key: string, cur: bigint, max: bigint, epoch: string, marker: string): Promise<void> {
  const r = await redis.initCounter(key, MARKER_KEY, cur.toString(), max.toString(), epoch, marker);
  if (r !== 1) throw scriptError("initCounter", key, r);
}

export interface CounterState {
  cur: bigint | null;
  max: bigint | null;
  epoch: string | null;
}

const big = (v: string | null) => (v === null ? null : BigInt(v));

/** Fences a counter for replay; returns its state before the fence. */
export async function fenceCounter(redis: Redis, key: string, token: string): Promise<CounterState> {
  const [cur, max, epoch] = await redis.fenceCounter(key, token);
  return { cur: big(cur), max: big(max), epoch };
}

/** Restores a fenced counter (cur and max never lowered) and lifts the fence with `epoch`. */
export async function restoreCounter(redis: Redis, key: string, token: string, cur: bigint, max: bigint, epoch: number) {
  const r = await redis.restoreCounter(key, token, cur.toString(), max.toString(), String(epoch));
  if (!Array.isArray(r)) throw scriptError("restoreCounter", key, r);
  return { cur: BigInt(r[0]), max: BigInt(r[1]) };
}
