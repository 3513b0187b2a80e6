/** The configuration a command runs with, and the MongoDB store the sequence commands use. */
import { type Config, loadConfig } from "../config/config.js";
import { SERVICE_VARS, type ServiceSettings, serviceSettings } from "../config/services.js";
import { Store } from "../storage/store.js";
import { localServices } from "./local-stack.js";
import { say } from "./output.js";

/** The configured services; with none configured, the local stack (brought up when `startStack`). */
async function services(startStack: boolean): Promise<ServiceSettings> {
  const configured = serviceSettings(process.env);
  if (configured) return configured;
  const local = await localServices(startStack, say);
  if (local) return local;
  throw new Error(`no services configured: set ${SERVICE_VARS.join(", ")}, or run \`npm run stack -- up\` (or \`npm start\`)`);
}

/** The whole configuration (services and settings), checked; `startStack` is `idd start`'s fallback. */
export async function commandConfig(startStack = false): Promise<Config> {
  const s = await services(startStack);
  return loadConfig(process.env, s);
}

/** Runs `f` with a store on the configured MongoDB, closed afterwards. */
export async function withStore<T>(f: (s: Store) => Promise<T>): Promise<T> {
  const c = await commandConfig();
  const store = new Store(c.services.mongodbUrl);
  try {
    return await f(store);
  } finally {
    await store.close();
  }
}
