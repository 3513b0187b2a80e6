/** Shared bits of the snowflake tests: a Redis with the scripts, layouts, and ids out of ranges. */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { MARKER_KEY, snowflakeLeasePrefix, snowflakeUntilKey } from "../../src/allocation/keys.js";
import { defineScripts } from "../../src/allocation/scripts.js";
import type { Range } from "../../src/protocol/reply.js";
import { type SnowflakeLayout, validateLayout } from "../../src/snowflake/layout.js";

export const EPOCH = Date.UTC(2026, 0, 1);

/** A connection with the scripts, on a Redis idd trusts (its marker set, as a worker would find it). */
export function scriptedRedis(url: string): Redis {
  const redis = defineScripts(new Redis(url));
  void redis.set(MARKER_KEY, "test", "NX"); // queued before anything the test sends on this connection
  return redis;
}

export function layoutWith(workerBits: number, seqBits = 12): SnowflakeLayout {
  const r = validateLayout({ epoch: EPOCH, workerBits, seqBits });
  if (!r.layout) throw new Error(r.problems.join("\n"));
  return r.layout;
}

/** A fresh sequence name, and its keys for cleaning up. */
export function freshSequence(): { name: string; keys: (workerBits: number) => string[] } {
  const name = `snow-test-${randomUUID()}`;
  return {
    name,
    keys: (workerBits) => [
      snowflakeUntilKey(name),
      ...Array.from({ length: 2 ** workerBits }, (_, i) => `${snowflakeLeasePrefix(name)}${i}`),
    ],
  };
}

export function idsOf(ranges: Range[]): bigint[] {
  const out: bigint[] = [];
  for (const r of ranges) for (let id = r.first; id <= r.last; id++) out.push(id);
  return out;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function expectStrictlyIncreasing(ids: bigint[]): void {
  for (let i = 1; i < ids.length; i++)
    if (!((ids[i] as bigint) > (ids[i - 1] as bigint))) throw new Error(`not increasing at ${i}: ${ids[i - 1]} then ${ids[i]}`);
}
