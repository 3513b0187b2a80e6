/**
 * Every setting idd reads from the environment, one row each: the configuration's key, the
 * variable's name, the default, the range or allowed values, a group and what it means. From these
 * rows come DEFAULTS, the variable names, the limits loadConfig checks (config.ts), the names the
 * start-up warning knows (unknown-variables.ts) and the settings tables of docs/settings.md
 * (settings-doc.ts, `npm run docs:settings`). Checks across settings (a minimum below a maximum) live in config.ts.
 * The rows are kept in three files by what they govern: settings-kafka.ts, settings-numbers.ts and
 * settings-operations.ts; their order is the table's.
 *
 * The four service variables and their TLS and credential companions (KAFKA_*, REDIS_URL,
 * REDIS_CA_FILE, MONGODB_URL, SCHEMA_REGISTRY_*) are not rows: services.ts and security.ts read and
 * check them together (all four or none, TLS files that go together), and docs/operations.md documents
 * them under Configuration and Security. The Redis topology variables (REDIS_SENTINELS, …)
 * are rows without a default, read and checked by redis-topology.ts.
 */
import type { SettingRow, SettingValue } from "./setting-row.js";
import { KAFKA_SETTINGS } from "./settings-kafka.js";
import { NUMBER_SETTINGS } from "./settings-numbers.js";
import { OPERATION_SETTINGS } from "./settings-operations.js";

export { SETTING_GROUPS, type SettingGroup, type SettingRow, type SettingValue } from "./setting-row.js";

/** The rows, grouped as docs/settings.md shows them; loadConfig reports problems in this order. */
export const SETTINGS = [...KAFKA_SETTINGS, ...NUMBER_SETTINGS, ...OPERATION_SETTINGS] as const;

/** A row of SETTINGS, with its literal types. */
type Row = (typeof SETTINGS)[number];
/** The rows loadConfig reads with a default. */
export type DefaultedRow = Extract<Row, { default: SettingValue }>;
export type DefaultedKey = DefaultedRow["key"];
export type Defaults = { readonly [R in DefaultedRow as R["key"]]: R["default"] };

/** Every default, by key. */
export const DEFAULTS: Defaults = Object.freeze(
  Object.fromEntries(SETTINGS.flatMap((r) => ("default" in r ? [[r.key, r.default]] : []))) as Defaults,
);

export function isDefaulted(row: SettingRow): row is SettingRow & { key: DefaultedKey; default: SettingValue } {
  return row.default !== undefined;
}

/** The row of a key. */
export function settingRow(key: Row["key"]): SettingRow {
  const row = SETTINGS.find((r) => r.key === key);
  if (!row) throw new Error(`no setting ${key}`);
  return row;
}
