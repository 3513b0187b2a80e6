/**
 * Loads the hooks IDD_HOOKS names, in order, comma-separated: `idd:rate` is
 * built in (src/hooks/builtin/); anything else is a module — a path (relative to the working
 * directory) or a package name — whose default export is a hook or a function that makes one
 * (src/hooks/hook.ts; src/hooks/examples/ has one).
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { DEFAULTS } from "../config/settings.js";
import { IddError } from "../core/errors.js";
import { rateHook } from "./builtin/rate.js";
import type { HookContext, HookModule, IssuanceHook } from "./hook.js";

/** What the built-in hooks are told, from the configuration (src/config/settings.ts). */
export interface BuiltInHookSettings {
  /** IDD_RATE_LOG_MS: how often idd:rate logs; 0: never. */
  rateLogMs: number;
}

const BUILT_IN: Record<string, (ctx: HookContext, s: BuiltInHookSettings) => IssuanceHook> = {
  "idd:rate": (ctx, s) => rateHook(ctx, s.rateLogMs),
};

function isHook(h: unknown): h is IssuanceHook {
  if (h === null || typeof h !== "object") return false;
  const o = h as Record<string, unknown>;
  return typeof o.name === "string" && ["before", "after", "onError"].some((k) => typeof o[k] === "function");
}

async function loadOne(spec: string, ctx: HookContext, settings: BuiltInHookSettings): Promise<IssuanceHook> {
  const builtIn = BUILT_IN[spec];
  if (builtIn) return builtIn(ctx, settings);
  if (spec === "idd:history")
    throw new IddError(
      "HOOK_INVALID",
      'the built-in hook "idd:history" is gone: answers are recorded per sequence now (`idd seq update <name> --audit`, docs/recovery.md: Auditing); remove it from IDD_HOOKS',
    );
  if (spec.startsWith("idd:"))
    throw new IddError("HOOK_INVALID", `no built-in hook "${spec}" (there are ${Object.keys(BUILT_IN).join(", ")})`);
  const url = spec.startsWith(".") || spec.startsWith("/") ? pathToFileURL(resolve(spec)).href : spec;
  let mod: { default?: HookModule };
  try {
    mod = (await import(url)) as { default?: HookModule };
  } catch (e) {
    throw new IddError("HOOK_INVALID", `hook module "${spec}" could not be loaded: ${(e as Error).message}`, { cause: e });
  }
  const exported = mod.default;
  let hook: unknown;
  try {
    hook = typeof exported === "function" ? await exported(ctx) : exported;
  } catch (e) {
    throw new IddError("HOOK_INVALID", `hook module "${spec}": its factory threw: ${(e as Error).message}`, { cause: e });
  }
  if (!isHook(hook))
    throw new IddError(
      "HOOK_INVALID",
      `hook module "${spec}" must export by default a hook { name, before?, after?, onError? } or a function returning one`,
    );
  return hook;
}

export async function loadHooks(
  specs: string,
  ctx: HookContext,
  settings: BuiltInHookSettings = { rateLogMs: DEFAULTS.rateLogMs },
): Promise<IssuanceHook[]> {
  const names = specs
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  const hooks: IssuanceHook[] = [];
  for (const spec of names) hooks.push(await loadOne(spec, ctx, settings));
  return hooks;
}
