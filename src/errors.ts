/**
 * One error type for the whole project. Every failure a user or a client can see carries a stable
 * `code` from the list below; error replies carry the same codes, so clients can switch on them.
 */
export const ErrorCodes = {
  // configuration
  CONFIG_INVALID: "configuration is invalid; every problem is listed in the message",
  // local stack (npm run stack)
  STACK_TOOL_MISSING: "a tool the local stack needs to install or run a service is not installed",
  STACK_PORT_IN_USE: "a port the local stack wants is taken by a process it did not start",
  STACK_NOT_READY: "a local stack service did not become ready in time",
  STACK_EXITED: "a local stack service exited while starting",
  STACK_INSTALL_FAILED: "installing a local stack service failed",
  // schema registry
  REGISTRY_UNAVAILABLE: "the schema registry could not be reached",
  REGISTRY_REJECTED: "the schema registry answered with an error",
  // Redis scripts
  REDIS_STATE_MISSING: "the Redis counter does not exist: Redis lost its state or it was never initialised",
  REDIS_FENCED: "the Redis counter's epoch changed: a replay is rewriting it or has rewritten it",
  REDIS_EXHAUSTED: "the Redis counter reached its reservation (max); the reservation must be raised first",
  REDIS_COUNTER_EXISTS: "the Redis counter exists already and was left unchanged",
  REDIS_SCRIPT_FAILED: "a Redis script returned an unknown result",
} as const;

export type ErrorCode = keyof typeof ErrorCodes;

export class IddError extends Error {
  readonly code: ErrorCode;
  readonly retriable: boolean;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; retriable?: boolean } = {}) {
    super(message, { cause: options.cause });
    this.name = "IddError";
    this.code = code;
    this.retriable = options.retriable ?? false;
  }
}

export function isIddError(e: unknown, code?: ErrorCode): e is IddError {
  return e instanceof IddError && (code === undefined || e.code === code);
}
