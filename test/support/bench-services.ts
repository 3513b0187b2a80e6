/**
 * The services a benchmark runs against: the four service variables when set, else the local stack,
 * started if needed and stopped again afterwards (only what the benchmark itself started), so a
 * benchmark never leaves ports taken for the next `npm test`.
 */
import { fromVars, type ServiceSettings, serviceSettings } from "../../src/config/services.js";
import { SERVICE_NAMES } from "../../stack/paths.js";
import { down, up } from "../../stack/stack.js";

export async function benchServices(say: (line: string) => void): Promise<{ services: ServiceSettings; stop: () => Promise<void> }> {
  const configured = serviceSettings(process.env);
  if (configured) return { services: configured, stop: async () => {} };
  const r = await up({ progress: (l) => say(`stack: ${l}`) });
  return {
    services: fromVars(r.env, "local stack"),
    stop: async () => {
      await down({ services: r.started.filter((s) => SERVICE_NAMES.includes(s)) });
    },
  };
}
