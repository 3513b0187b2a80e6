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
  Lost = -5,
  NoWorkerId = -6,
  LeaseLost = -7,
}

/** Every script in lua/, by the name its file starts with. */
export const SCRIPT_NAMES = [
  "acquireLease",
  "claimBlock",
  "fenceCounter",
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
const LOST: ScriptFailure = "REDIS_STATE_LOST";

/**
 * Per script, each negative code it returns and the error it means. The same code may mean another
 * thing in another script: -2 is a replay's fence on a counter, but a newer partition owner for
 * recordAnswers. takeOwner and recordAnswers also answer a positive partition count when the caller
 * routes by an older one: that is ROUTE_STALE (`routeStale`), not a code.
 */
export const SCRIPT_FAILURES: { readonly [S in ScriptName]: Readonly<Partial<Record<ScriptCode, ScriptFailure>>> } = {
  claimBlock: { [ScriptCode.Missing]: MISSING, [ScriptCode.Fenced]: FENCED, [ScriptCode.Exhausted]: EXHAUSTED, [ScriptCode.Lost]: LOST },
  raiseMax: { [ScriptCode.Missing]: MISSING, [ScriptCode.Fenced]: FENCED, [ScriptCode.Lost]: LOST },
  initCounter: { [ScriptCode.Exists]: EXISTS, [ScriptCode.Lost]: LOST },
  fenceCounter: {},
  restoreCounter: { [ScriptCode.Fenced]: FENCED },
  acquireLease: { [ScriptCode.NoWorkerId]: "WORKER_IDS_EXHAUSTED", [ScriptCode.Lost]: LOST },
  renewLease: { [ScriptCode.LeaseLost]: "LEASE_LOST" },
  // Not an error for the caller (releasing a lease it no longer holds changes nothing): releaseLease answers false.
  releaseLease: { [ScriptCode.LeaseLost]: "LEASE_LOST" },
  takeOwner: {},
  recordAnswers: { [ScriptCode.Fenced]: "WORKER_FENCED" },
};

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
