/** The sequence kinds, by name. */
import type { SequenceDef } from "../definition.js";
import { daily } from "./daily.js";
import { formatted } from "./formatted.js";
import type { SequenceKind } from "./kind.js";
import { monotonic } from "./monotonic.js";
import { obfuscated } from "./obfuscated.js";
import { snowflake } from "./snowflake.js";

export const KINDS = { monotonic, daily, formatted, obfuscated, snowflake } as const satisfies Record<string, SequenceKind>;
export type KindName = keyof typeof KINDS;
export const KIND_NAMES = Object.keys(KINDS) as KindName[];

export const isKindName = (name: string): name is KindName => Object.hasOwn(KINDS, name);

export const kindOf = (def: Pick<SequenceDef, "kind">): SequenceKind => KINDS[def.kind];
