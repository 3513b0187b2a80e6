/**
 * Issuance hooks: code of your own around the moment numbers are issued, loaded from modules
 * named in IDD_HOOKS (src/hooks/load.ts). What a hook may do is deliberately small, so that no
 * hook can break the guarantees (G1–G6, docs/design.md §2):
 *
 * - `before(request)` may refuse a request that has not been answered yet: return `{ refuse: reason }`
 *   and the request is answered HOOK_REFUSED before any number is issued for it. Retries of a request
 *   answered earlier are never asked about: they get their numbers (G6).
 * - `after(event)` and `onError(event)` only observe: they run after the answers are recorded, off
 *   the reply path, on frozen copies (a hook that writes to an event gets a TypeError, nothing else).
 * - Every call is bounded by IDD_HOOK_TIMEOUT_MS. A `before` that throws or does not settle in time
 *   lets the request through (fail open: a broken hook must not stop issuance), and is logged and
 *   counted. Observers that fall behind by more than a bounded number of events lose events
 *   (counted), never requests.
 * - Hooks run in the order IDD_HOOKS names them; the first refusal wins.
 */
import type { Logger } from "pino";
import type { Range } from "../core/range.js";
import type { Store } from "../storage/store.js";

/** A request as hooks see it. */
export interface HookRequest {
  readonly sequence: string;
  readonly requestId: string;
  readonly count: number;
  readonly fields: Readonly<Record<string, string>>;
  /** The request partition it arrived on. */
  readonly partition: number;
}

/** Numbers issued (or, with `deduped`, given again to a retry). */
export interface IssuedEvent extends HookRequest {
  readonly period: string | null;
  readonly ranges: readonly Readonly<Range>[];
  readonly formatted: readonly string[];
  /** Epoch ms of the answer. */
  readonly at: number;
  readonly deduped: boolean;
}

/** A request answered with an error code. */
export interface FailedEvent extends HookRequest {
  readonly code: string;
  readonly message: string;
  readonly at: number;
}

export type BeforeResult = undefined | { refuse: string };

export interface IssuanceHook {
  /** For logs and counters. */
  readonly name: string;
  before?(request: HookRequest): BeforeResult | Promise<BeforeResult>;
  after?(event: IssuedEvent): void | Promise<void>;
  onError?(event: FailedEvent): void | Promise<void>;
  /** Called once when the worker stops (flush what you buffer). */
  close?(): void | Promise<void>;
}

/** What a hook module's factory is given. */
export interface HookContext {
  /** This worker's id (IDD_WORKER_ID). */
  worker: string;
  logger: Logger;
  /** idd's MongoDB store (the built-in history hook appends to it). */
  store: Store;
  env: NodeJS.ProcessEnv;
}

/** A hook module's default export: a hook, or a function that makes one. */
export type HookModule = IssuanceHook | ((ctx: HookContext) => IssuanceHook | Promise<IssuanceHook>);
