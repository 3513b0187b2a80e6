/** The sequence kinds, by name: one module per kind (kind.ts says what a kind decides). */
import type { SequenceDef } from "../sequence-def.js";
import { daily } from "./daily.js";
import { formatted } from "./formatted.js";
import type { KindTable, SequenceKind, SourceName } from "./kind.js";
import { monotonic } from "./monotonic.js";
import { obfuscated } from "./obfuscated.js";
import { snowflake } from "./snowflake.js";

export { isKindName, KIND_NAMES, type KindName } from "../sequence-def.js";

export const KINDS: KindTable = { monotonic, daily, formatted, obfuscated, snowflake };

/** The module of `def`'s kind. */
export const kindOf = (def: Pick<SequenceDef, "kind">): SequenceKind => KINDS[def.kind];

/** Where `def`'s numbers come from: gapless sequences from MongoDB, the others from their kind's source. */
export const sourceOf = (def: Pick<SequenceDef, "kind" | "gapless">): SourceName => (def.gapless ? "gapless" : KINDS[def.kind].source);
