/**
 * An example issuance hook: refuses requests for the sequences listed in IDD_DENY_SEQUENCES
 * (comma-separated), and logs every error answer. Use it with
 * `IDD_HOOKS=./dist/src/hooks/examples/deny-list.js` (or a copy of your own).
 */
import type { HookContext, IssuanceHook } from "../hook.js";

export default function denyList(ctx: HookContext): IssuanceHook {
  const denied = new Set((ctx.env.IDD_DENY_SEQUENCES ?? "").split(",").filter((s) => s !== ""));
  return {
    name: "deny-list",
    before: (request) => (denied.has(request.sequence) ? { refuse: `sequence "${request.sequence}" is closed for issuance` } : undefined),
    onError: (event) => ctx.logger.info({ sequence: event.sequence, code: event.code }, "request answered with an error"),
  };
}
