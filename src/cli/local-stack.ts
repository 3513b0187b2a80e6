/**
 * The local stack, for when none of the four service variables is set: stack/local-services.ts,
 * development tooling that the Docker image and the npm package do not ship. It is loaded by a path
 * computed at run time, and only then, so that src/ never imports stack/ (not even for the compiler).
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { ServiceSettings } from "../config/services.js";

/** What stack/local-services.ts exports; it declares its export with this type, so the compiler checks both ends. */
export interface LocalServicesModule {
  /** The settings the local stack wrote; with `start`, the local stack brought up first. Undefined: none. */
  localServices(opts: { start: boolean; say: (line: string) => void }): Promise<ServiceSettings | undefined>;
}

/** stack/ beside src/ (run through tsx), or dist/stack/ beside dist/src/ (built by `npm start`). */
const STACK_DIR = new URL("../../stack/", import.meta.url);

/** The local stack's settings (see LocalServicesModule); undefined when idd was installed without stack/. */
export async function localServices(start: boolean, say: (line: string) => void): Promise<ServiceSettings | undefined> {
  if (!existsSync(fileURLToPath(STACK_DIR))) return undefined;
  const stack = (await import(new URL("local-services.js", STACK_DIR).href)) as LocalServicesModule;
  return stack.localServices({ start, say });
}
