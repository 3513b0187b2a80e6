/**
 * idd's fallback when none of the four service variables is set. src/cli/local-stack.ts loads this
 * file by a path computed at run time, and only then: src/ never imports stack/, and the Docker image
 * and the npm package, which ship no stack/, simply have no fallback.
 */
import type { LocalServicesModule } from "../src/cli/local-stack.js";
import { fromVars } from "../src/config/services.js";
import { stackServiceSettings } from "./env-file.js";
import { up } from "./stack.js";

/** The settings the local stack wrote; for `idd start` (`start`), the local stack brought up first. */
export const localServices: LocalServicesModule["localServices"] = async ({ start, say }) => {
  if (!start) return stackServiceSettings();
  say("no services configured: bringing up the local stack (npm run stack -- up)");
  const r = await up({ progress: (l) => say(`stack: ${l}`) });
  return fromVars(r.env, "local stack");
};
