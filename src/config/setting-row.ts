/** What a row of the settings table (settings.ts) holds, and the groups rows belong to. */

export type SettingValue = number | string | boolean;

export const SETTING_GROUPS = {
  kafka: "Kafka topics and consumer group",
  limits: "Request limits and overload (Wire contract)",
  sequences: "Sequences, retries and recovery",
  blocks: "Blocks, reservations and Redis",
  snowflake: "Snowflake sequences",
  obfuscation: "Obfuscated sequences",
  hooks: "Issuance hooks",
  ops: "Operations: HTTP surface, logs, worker id",
  tooling: "Repository tooling (the local stack and the tests; a worker reads only IDD_STACK_DIR)",
} as const;
export type SettingGroup = keyof typeof SETTING_GROUPS;

export interface SettingRow {
  /** The configuration's property (for rows loadConfig does not keep, a name all the same). */
  readonly key: string;
  readonly env: string;
  /** Rows with a default are read, checked and defaulted by loadConfig, and are in DEFAULTS. */
  readonly default?: SettingValue;
  /** The default in words, for rows without a plain one. */
  readonly defaultText?: string;
  /** Inclusive bounds of a number. */
  readonly range?: readonly [number, number];
  /** A number that may have a fraction; other numbers must be integers. */
  readonly fraction?: true;
  /** The values a string may take. */
  readonly values?: readonly string[];
  /** What a string must look like, and how to say so: `"bad topic" is not ${pattern[1]}`. */
  readonly pattern?: readonly [RegExp, string];
  /** A secret: may instead be given as `${env}_FILE`, naming a file that holds it; never printed. */
  readonly file?: true;
  /** Who reads the variable, when it is not loadConfig. */
  readonly readBy?: string;
  readonly group: SettingGroup;
  readonly doc: string;
}

export const DAY_MS = 86_400_000;
