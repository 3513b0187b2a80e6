/**
 * The env file the local stack writes (`<IDD_STACK_DIR or ./.stack>/env`), read back as idd's service
 * settings when none of the four service variables is set.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fromVars, SERVICE_VARS, type ServiceSettings, type ServiceVar } from "../src/config/services.js";
import { IddError } from "../src/core/errors.js";

export function stackEnvPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.IDD_STACK_DIR ?? join(process.cwd(), ".stack"), "env");
}

export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*([A-Z_][A-Z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (m) out[m[1] as string] = m[2] as string;
  }
  return out;
}

/** The settings in the stack's env file, checked like the environment's; undefined when there is no file. */
export function stackServiceSettings(env: NodeJS.ProcessEnv = process.env): ServiceSettings | undefined {
  const file = stackEnvPath(env);
  if (!existsSync(file)) return undefined;
  const vars = parseEnvFile(readFileSync(file, "utf8"));
  const missing = SERVICE_VARS.filter((k) => !vars[k]);
  if (missing.length > 0) throw new IddError("CONFIG_INVALID", `${file} lacks ${missing.join(", ")}`);
  return fromVars(vars as Record<ServiceVar, string>, file);
}
