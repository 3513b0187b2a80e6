/**
 * The Redis seam: every script in lua/ as one typed method of `Scripts` (bullmq's `Scripts`). A
 * method builds its call with the pure builder of script-args.ts, sends it, and turns the result
 * into a value or, through the one table of script-errors.ts, a typed error.
 *
 * Scripts are registered once per connection with ioredis's defineCommand (EVALSHA, falling back
 * to EVAL). Script files are named `camelName-K.lua`, K being the number of KEYS the script takes,
 * or `camelName-n.lua` for a variable number (sent first).
 */
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { PACKAGE_ROOT } from "../core/package-root.js";
import type { RedisClient } from "./client-type.js";
import {
  type AcquireLeaseInput,
  acquireLeaseArgs,
  type ClaimBlockInput,
  claimBlockArgs,
  type FenceCounterInput,
  type FenceSnowflakeInput,
  fenceCounterArgs,
  fenceSnowflakeArgs,
  type InitCounterInput,
  initCounterArgs,
  type RaiseMaxInput,
  type RecordAnswersInput,
  type ReleaseLeaseInput,
  type RenewLeaseInput,
  type RestoreCounterInput,
  raiseMaxArgs,
  recordAnswersArgs,
  releaseLeaseArgs,
  renewLeaseArgs,
  restoreCounterArgs,
  type ScriptCall,
  type TakeOwnerInput,
  takeOwnerArgs,
} from "./script-args.js";
import { type Refused, refusal, routeStale, ScriptCode, type ScriptName, scriptError } from "./script-errors.js";
import { decodeAnswer, type StoredAnswer } from "./stored-answer.js";

export const LUA_DIR = join(PACKAGE_ROOT, "lua");

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

/** A command defineCommand added: KEYS then ARGV (after their count, for a `-n` script). */
type ScriptCommand = (keysAndArgs: (string | number)[]) => Promise<unknown>;
/** A connection every script of lua/ is registered on. */
export type ScriptedRedis<R extends RedisClient = RedisClient> = R & { [S in ScriptName]: ScriptCommand };

let files: ScriptFile[] | undefined;
/** lua/, read once per process. */
const scriptFiles = () => (files ??= readScripts());
const defined = new WeakSet<RedisClient>();

/** Registers every script of lua/ on `redis`, once per connection, and returns it. */
export function defineScripts<R extends RedisClient>(redis: R): ScriptedRedis<R> {
  if (!defined.has(redis)) {
    for (const s of scriptFiles())
      redis.defineCommand(s.name, { ...(s.numberOfKeys !== undefined && { numberOfKeys: s.numberOfKeys }), lua: s.lua });
    defined.add(redis);
  }
  return redis as ScriptedRedis<R>; // defineCommand added a method per script
}

/** Sends one script call; a fake in unit tests. */
export type RunScript = (script: ScriptName, call: ScriptCall) => Promise<unknown>;

function runOn(redis: RedisClient): RunScript {
  const scripted = defineScripts(redis);
  const variadic = new Set(
    scriptFiles()
      .filter((f) => f.numberOfKeys === undefined)
      .map((f) => f.name),
  );
  // One array, which ioredis flattens: spread into the call, a step's 100,000 answers overflowed the stack.
  return (script, { keys, args }) => {
    const command: ScriptCommand = scripted[script];
    return command.call(scripted, variadic.has(script) ? [keys.length, ...keys, ...args] : [...keys, ...args]);
  };
}

export interface Block {
  first: bigint;
  last: bigint;
  /** The counter's max when the block was granted. */
  max: bigint;
  /** The counter's claims before this one that Redis knows, most recent first, at most three (lua/claimBlock-2.lua). */
  previous: ClaimRecord[];
}

/** A claim as Redis keeps it with its counter: enough to record it when its grant was never written. */
export interface ClaimRecord {
  /** The claim id: the `_id` of the claim's grant. */
  id: string;
  first: bigint;
  last: bigint;
  gen: number;
  epoch: number;
  /** Whether its claimant writes its grant before using it (strict grant log). */
  writeAhead: boolean;
  /** When it was claimed, by its claimant's clock. */
  at: Date;
  worker: string;
}

/** Reads a claim record ("id|first|last|gen|epoch|mode|atMs|claimant"); undefined when it is not one. */
export function parseClaimRecord(text: string): ClaimRecord | undefined {
  const m = /^([^|]+)\|(\d+)\|(\d+)\|(\d+)\|(\d+)\|([sr])\|(\d+)\|(.*)$/s.exec(text);
  if (!m) return undefined;
  const [, id, first, last, gen, epoch, mode, atMs, worker] = m as unknown as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  return {
    id,
    first: BigInt(first),
    last: BigInt(last),
    gen: Number(gen),
    epoch: Number(epoch),
    writeAhead: mode === "s",
    at: new Date(Number(atMs)),
    worker,
  };
}

export interface CounterState {
  cur: bigint | null;
  max: bigint | null;
  epoch: string | null;
  /** The node identity the counter was written under (null: none, or the counter is missing). */
  node: string | null;
}

const big = (v: string | null) => (v === null ? null : BigInt(v));

/** The scripts of lua/ on one connection (or on a fake `RunScript`). */
/** A worker id leased (see Scripts.acquireLease), or, when asked, the sequence's state missing. */
export type LeaseAnswer =
  | { workerId: number; floorMs: number | null; heldOff: boolean; missing?: undefined }
  | { missing: { redisMs: number; node: string } };

/** A claim's input; worker, write-ahead, time and claim id have defaults. */
export type ClaimArgs = Omit<ClaimBlockInput, "claimId" | "worker" | "writeAhead" | "atMs"> &
  Partial<Pick<ClaimBlockInput, "claimId" | "worker" | "writeAhead" | "atMs">>;

const CLAIM_REFUSALS = ["missing", "suspect", "fenced", "exhausted", "superseded"] as const;
const RAISE_REFUSALS = ["missing", "suspect", "fenced"] as const;

export class Scripts {
  readonly #run: RunScript;

  constructor(redis: RedisClient | RunScript) {
    this.#run = typeof redis === "function" ? redis : runOn(redis);
  }

  /**
   * Claims up to `size` numbers under `gen`, raising the sequence's fence to it. `claimId` (default: a
   * fresh one) makes it safe to retry a claim whose answer never came (a timeout): the same id gets
   * the same block back, if the claim ran.
   */
  async claimBlock(a: ClaimArgs): Promise<Block> {
    const r = await this.claim(a);
    if ("refused" in r) throw r.error;
    return r.granted;
  }

  /** `claimBlock`, with the script's refusals as values: `granted`, or what happened instead. */
  async claim(a: ClaimArgs): Promise<{ granted: Block } | Refused> {
    const call = claimBlockArgs({ worker: "", writeAhead: false, atMs: Date.now(), ...a, claimId: a.claimId ?? randomUUID() });
    const r = await this.#run("claimBlock", call);
    if (!Array.isArray(r)) return refusal("claimBlock", call.keys[0] as string, r, CLAIM_REFUSALS);
    const [first, last, max, ...before] = r as [number, number, number, ...(string | null | undefined)[]];
    const previous: ClaimRecord[] = [];
    for (const text of before) {
      const p = typeof text === "string" ? parseClaimRecord(text) : undefined;
      if (p) previous.push(p);
    }
    return { granted: { first: BigInt(first), last: BigInt(last), max: BigInt(max), previous } };
  }

  /** Raises the counter's max (never lowers it); returns the max in force. */
  async raiseMax(a: RaiseMaxInput): Promise<bigint> {
    const r = await this.raise(a);
    if ("refused" in r) throw r.error;
    return r.max;
  }

  /** `raiseMax`, with the script's refusals as values. */
  async raise(a: RaiseMaxInput): Promise<{ max: bigint } | Refused<"missing" | "suspect" | "fenced">> {
    const call = raiseMaxArgs(a);
    const r = await this.#run("raiseMax", call);
    if (typeof r !== "number" || r < 0) return refusal("raiseMax", call.keys[0] as string, r, RAISE_REFUSALS);
    return { max: BigInt(r) };
  }

  /** Creates a counter that does not exist; throws REDIS_COUNTER_EXISTS when it does. */
  async initCounter(a: InitCounterInput): Promise<void> {
    const call = initCounterArgs(a);
    const r = await this.#run("initCounter", call);
    if (r !== 1) throw scriptError("initCounter", call.keys[0] as string, r);
  }

  /**
   * Fences a counter for a restore; returns its state before the fence. With `onlySuspect`, a counter
   * that exists under this node is left alone: undefined.
   */
  async fenceCounter(a: FenceCounterInput): Promise<CounterState | undefined> {
    const call = fenceCounterArgs(a);
    const r = await this.#run("fenceCounter", call);
    if (r === ScriptCode.Exists && (a.onlySuspect || a.orStaleEpoch !== undefined)) return undefined;
    if (!Array.isArray(r)) throw scriptError("fenceCounter", call.keys[0] as string, r);
    const [cur, max, epoch, node] = r as [string | null, string | null, string | null, string | null];
    return { cur: big(cur), max: big(max), epoch, node: node ?? null };
  }

  /** Restores a fenced counter (cur and max never lowered), marks it with this node and lifts the fence with `epoch`. */
  async restoreCounter(a: RestoreCounterInput): Promise<{ cur: bigint; max: bigint }> {
    const call = restoreCounterArgs(a);
    const r = await this.#run("restoreCounter", call);
    if (!Array.isArray(r)) throw scriptError("restoreCounter", call.keys[0] as string, r);
    const [cur, max] = r as [number, number];
    return { cur: BigInt(cur), max: BigInt(max) };
  }

  /**
   * Leases a free worker id; its earlier issued-until bound is `floorMs` (null: never leased), `heldOff`
   * when that bound is the hold-off after Redis lost its state. With `missing: "ask"` and no state,
   * leases nothing and answers `missing`: Redis's time and node. Throws WORKER_IDS_EXHAUSTED.
   */
  async acquireLease(a: AcquireLeaseInput): Promise<LeaseAnswer> {
    const call = acquireLeaseArgs(a);
    const r = await this.#run("acquireLease", call);
    if (!Array.isArray(r)) throw scriptError("acquireLease", call.keys[0] as string, r);
    if (r[0] === ScriptCode.Missing) return { missing: { redisMs: Number(r[1]), node: String(r[2]) } };
    const [workerId, floorMs, heldOff] = r as [number, string | null, number];
    return { workerId, floorMs: floorMs === null ? null : Number(floorMs), heldOff: heldOff === 1 };
  }

  /** Renews a lease this token holds; throws LEASE_LOST when the key expired or another holder has it. */
  async renewLease(a: RenewLeaseInput): Promise<void> {
    const call = renewLeaseArgs(a);
    const r = await this.#run("renewLease", call);
    if (r !== 1) throw scriptError("renewLease", call.keys[0] as string, r);
  }

  /** Frees a lease this token holds and sets the id's bound to `finalMs` (null: keep it); false when it was not held. */
  async releaseLease(a: ReleaseLeaseInput): Promise<boolean> {
    return (await this.#run("releaseLease", releaseLeaseArgs(a))) === 1;
  }

  /** A gen for a partition of the topic; throws ROUTE_STALE when Redis holds a larger partition count. */
  async takeOwner(a: TakeOwnerInput): Promise<number> {
    const r = await this.#run("takeOwner", takeOwnerArgs(a));
    if (Array.isArray(r) && typeof r[0] === "number") return r[0];
    if (typeof r === "number" && r > 0) throw routeStale(a.partitions, r);
    throw scriptError("takeOwner", a.topic, r);
  }

  /** Raises the snowflake sequence's fence to `gen` (its first use under it); returns its high mark. Throws WORKER_FENCED. */
  async fenceSnowflake(a: FenceSnowflakeInput): Promise<bigint | undefined> {
    const call = fenceSnowflakeArgs(a);
    const r = await this.#run("fenceSnowflake", call);
    if (!Array.isArray(r))
      throw scriptError("fenceSnowflake", call.keys[0] as string, r, `sequence ${a.sequence} has a newer issuer than gen ${a.gen}`);
    const high = r[0] as string | null | undefined;
    return high == null ? undefined : BigInt(high);
  }

  /**
   * Records one sequence's answers under `gen`. Returns, per answer, the one recorded earlier for the
   * same requestId (to be sent instead) or undefined. Throws WORKER_FENCED when the sequence's fence
   * is not `gen` on this node.
   */
  async recordAnswers(a: RecordAnswersInput): Promise<(StoredAnswer | undefined)[]> {
    const r = await this.#run("recordAnswers", recordAnswersArgs(a));
    // Answers are strings or null; a refusal is its code, then the place of the sequence it concerns.
    if (Array.isArray(r) && typeof r[0] !== "number") return (r as (string | null)[]).map((v) => (v == null ? undefined : decodeAnswer(v)));
    const [code, at] = Array.isArray(r) ? (r as [unknown, number]) : [r, 1];
    const sequence = a.sequences[at - 1]?.sequence ?? "";
    const why = code === ScriptCode.Unconfirmed ? "Redis may have lost its fence" : "a newer gen claimed it";
    const others = a.sequences.length > 1 ? ` (nor the call's ${a.sequences.length - 1} other sequences)` : "";
    throw scriptError("recordAnswers", sequence, code, `sequence ${sequence}: not recorded under gen ${a.gen}: ${why}${others}`);
  }
}
