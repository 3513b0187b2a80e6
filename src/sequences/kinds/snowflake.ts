/**
 * `snowflake`: 64-bit ids made in memory from the time, a worker id leased from Redis and a
 * sequence within the time unit (src/issuing/sources/snowflake/): no Redis counter, no round trip per id. The
 * layout (epoch, unit, bit widths; at most 63 bits, so ids are positive signed longs) is fixed
 * when the sequence is created; the epoch defaults to the start of that day, UTC. Ids are unique
 * (a worker id has one holder at a time, and a new holder starts after the times its predecessors
 * may have used) and strictly increase per worker; across workers they follow the clocks (see
 * docs/sequences.md: Snowflake ids). Replies carry them as Avro longs / exact JSON digits: above 2^53 a
 * JavaScript number rounds, so read them as BigInt or strings.
 */

import type { SnowflakeDef } from "../sequence-def.js";
import { LAYOUT_DEFAULTS, parseLayout, validateLayout } from "../snowflake-layout.js";
import { NO_SETTINGS, noFields, refuseSettings, type SequenceKind } from "./kind.js";

const startOfDayUtc = (ms: number) => ms - (ms % 86_400_000);

export const snowflake: SequenceKind<SnowflakeDef> = {
  name: "snowflake",
  summary:
    "64-bit ids from the time, a leased worker id and a per-unit sequence, made in memory; --layout 'epoch=…,timeBits=41,workerBits=10,seqBits=12'",
  source: "clock",
  prints: false,
  settings(input, existing, problems) {
    refuseSettings("snowflake", input, ["layout"], problems);
    if (existing) {
      if (input.layout !== undefined) problems.push("layout cannot change once ids may have been issued");
      return { ...NO_SETTINGS, snowflake: existing.snowflake };
    }
    const given = typeof input.layout === "string" ? parseLayout(input.layout, problems) : (input.layout ?? {});
    const now = Date.now();
    const { layout, problems: layoutProblems } = validateLayout({ epoch: startOfDayUtc(now), ...given }, { now });
    problems.push(...layoutProblems.map((p) => `layout: ${p}`));
    // Without a layout there are problems, and no definition is made of these settings: the defaults stand in.
    return { ...NO_SETTINGS, snowflake: layout ?? { epochMs: startOfDayUtc(now), ...LAYOUT_DEFAULTS } };
  },
  refuse: noFields,
  present: () => [],
};
