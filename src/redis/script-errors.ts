/**
 * What a script's result means when it is not a success: one table, per script, from the negative
 * codes its header lists to the error idd throws (bullmq's `ErrorCode` and `finishedErrors`). Every
 * method of `Scripts` turns a failed result into an error here, and nowhere else.
 */
import { type ErrorCode, IddError } from "../core/errors.js";

/** Negative results scripts return, as listed in their headers. */
export enum ScriptCode {
  Missing = -1,
  Fenced = -2,
  Exhausted = -3,
  Exists = -4,
  NoWorkerId = -6,
  LeaseLost = -7,
  Suspect = -8,
  Superseded = -9,
  Unconfirmed = -10,
}

/** Every script in lua/, by the name its file starts with. */
export const SCRIPT_NAMES = [
  "acquireLease",
  "claimBlock",
  "fenceCounter",
  "fenceSnowflake",
  "initCounter",
  "raiseMax",
  "recordAnswers",
  "releaseLease",
  "renewLease",
  "restoreCounter",
  "takeOwner",
] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

/** A script failure is an error code; whether it is retriable is the code's (src/core/errors.ts). */
export type ScriptFailure = ErrorCode;

const MISSING: ScriptFailure = "REDIS_STATE_MISSING";
const FENCED: ScriptFailure = "REDIS_FENCED";
const EXHAUSTED: ScriptFailure = "REDIS_EXHAUSTED";
const EXISTS: ScriptFailure = "REDIS_COUNTER_EXISTS";
const SUSPECT: ScriptFailure = "REDIS_STATE_SUSPECT";
const SUPERSEDED: ScriptFailure = "WORKER_FENCED";

/**
 * Per script, each negative code it returns and the error it means. The same code may mean another
 * thing in another script: -4 is "exists" for initCounter, but "nothing to restore" for fenceCounter.
 * -9 (a newer issuer) and -10 (a fence Redis may have lost) both fence the worker: WORKER_FENCED.
 * takeOwner answers a positive partition count when the caller routes by an older one: that is
 * ROUTE_STALE (`routeStale`), not a code.
 */
export const SCRIPT_FAILURES: { readonly [S in ScriptName]: Readonly<Partial<Record<ScriptCode, ScriptFailure>>> } = {
  claimBlock: {
    [ScriptCode.Missing]: MISSING,
    [ScriptCode.Suspect]: SUSPECT,
    [ScriptCode.Fenced]: FENCED,
    [ScriptCode.Superseded]: SUPERSEDED,
    [ScriptCode.Unconfirmed]: SUPERSEDED,
    [ScriptCode.Exhausted]: EXHAUSTED,
  },
  raiseMax: { [ScriptCode.Missing]: MISSING, [ScriptCode.Suspect]: SUSPECT, [ScriptCode.Fenced]: FENCED },
  initCounter: { [ScriptCode.Exists]: EXISTS },
  fenceCounter: { [ScriptCode.Exists]: EXISTS },
  fenceSnowflake: { [ScriptCode.Superseded]: SUPERSEDED },
  restoreCounter: { [ScriptCode.Fenced]: FENCED },
  acquireLease: { [ScriptCode.NoWorkerId]: "WORKER_IDS_EXHAUSTED" },
  renewLease: { [ScriptCode.LeaseLost]: "LEASE_LOST" },
  releaseLease: { [ScriptCode.LeaseLost]: "LEASE_LOST" },
  takeOwner: {},
  recordAnswers: { [ScriptCode.Superseded]: SUPERSEDED, [ScriptCode.Unconfirmed]: SUPERSEDED },
};

/**
 * What a counter script's known failure means to its caller, by name: the counter is `missing` or
 * `suspect` (restore it), `fenced` (a restore holds its epoch, or it is another one), `exhausted`
 * (raise the reservation), `superseded` (a newer gen holds the sequence's fence: WORKER_FENCED).
 */
export type Refusal = "missing" | "suspect" | "fenced" | "exhausted" | "superseded";

const REFUSALS: Readonly<Partial<Record<ScriptCode, Refusal>>> = {
  [ScriptCode.Missing]: "missing",
  [ScriptCode.Suspect]: "suspect",
  [ScriptCode.Fenced]: "fenced",
  [ScriptCode.Exhausted]: "exhausted",
  [ScriptCode.Superseded]: "superseded",
  [ScriptCode.Unconfirmed]: "superseded",
};

/** A script's known failure as a value: what happened, and the error it is when it leaves the worker. */
export interface Refused<R extends string = Refusal> {
  refused: R;
  error: IddError;
}

/**
 * `result` of `script` as a refusal when the script's table lists it (`allowed`: the refusals the
 * caller handles); anything else is thrown, as `scriptError`.
 */
export function refusal<R extends Refusal>(script: ScriptName, subject: string, result: unknown, allowed: readonly R[]): Refused<R> {
  const error = scriptError(script, subject, result);
  const refused = typeof result === "number" ? REFUSALS[result as ScriptCode] : undefined;
  if (error.code === "REDIS_SCRIPT_FAILED" || refused === undefined || !(allowed as readonly Refusal[]).includes(refused)) throw error;
  return { refused: refused as R, error };
}

/**
 * The error for `result` of `script` on `subject` (the key or partition it worked on); `message`
 * replaces the generic one for a known code. A result the table does not list is REDIS_SCRIPT_FAILED.
 */
export function scriptError(script: ScriptName, subject: string, result: unknown, message?: string): IddError {
  const known = typeof result === "number" ? SCRIPT_FAILURES[script][result as ScriptCode] : undefined;
  if (!known) return new IddError("REDIS_SCRIPT_FAILED", `${script} on ${subject} returned ${JSON.stringify(result)}`);
  return new IddError(known, message ?? `${script} on ${subject}: ${known}`);
}

/** Thrown when the request topic's partition count in force is larger than the one the caller routes by. */
export function routeStale(partitions: number, inForce: number): IddError {
  return new IddError(
    "ROUTE_STALE",
    `the request topic has ${inForce} partitions in force; this worker routed by ${partitions}: it learns the new count and routes again`,
  );
}
