/** Shared bits of the snowflake tests: a Redis with the scripts, layouts, and ids out of ranges. */
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { afterAll } from "vitest";
import type { Range } from "../../../../src/core/range.js";
import type { WorkerLease } from "../../../../src/issuing/sources/snowflake/lease.js";
import { snowflakeUntilKey } from "../../../../src/redis/keys.js";
import { type SnowflakeLayout, validateLayout } from "../../../../src/sequences/snowflake-layout.js";
import { startPrivateRedis } from "../../../support/private-redis.js";
import { scriptClient } from "../../../support/redis.js";

export const EPOCH = Date.UTC(2026, 0, 1);

/** A connection with the scripts. */
export function scriptedRedis(url: string): Redis {
  return scriptClient(url);
}

/**
 * A Redis server of the calling test file's own (its URL, a connection with the scripts, and the
 * leases the file registers, abandoned after its tests; then the server stops, so nothing needs
 * deleting). Own, so that the tests may delete or flush what they like.
 */
export async function ownRedis(): Promise<{ url: string; redis: Redis; leases: WorkerLease[] }> {
  const server = await startPrivateRedis();
  const redis = scriptedRedis(server.url);
  const leases: WorkerLease[] = [];
  afterAll(async () => {
    for (const l of leases) l.abandon();
    // Commands still out (a sequence's state marked just before the last test ended, a renewal the
    // timer had sent) finish before the connection goes: closed under them, each rejects with
    // "Connection is closed", and one nobody awaits is an unhandled rejection that fails the run.
    await Promise.allSettled(marking);
    await redis.quit().catch(() => redis.disconnect());
    await server.stop();
  });
  return { url: server.url, redis, leases };
}

export function layoutWith(workerBits: number, seqBits = 12): SnowflakeLayout {
  const r = validateLayout({ epoch: EPOCH, workerBits, seqBits });
  if (!r.layout) throw new Error(r.problems.join("\n"));
  return r.layout;
}

/** Sequences' states being marked in Redis (freshSequence), awaited before a test file's Redis goes. */
const marking = new Set<Promise<unknown>>();

/** A new sequence name; with `redis`, its state is marked as in use (no first-lease hold-off: knownSnowflakeState). */
export function freshSequence(redis?: Redis): { name: string } {
  const name = `snow-test-${randomUUID()}`;
  if (redis) {
    const marked = knownSnowflakeState(redis, name).finally(() => marking.delete(marked));
    marking.add(marked);
  }
  return { name };
}

export function idsOf(ranges: Range[]): bigint[] {
  const out: bigint[] = [];
  for (const r of ranges) for (let id = r.first; id <= r.last; id++) out.push(id);
  return out;
}

export { sleep } from "../../../support/wait.js";

export function expectStrictlyIncreasing(ids: bigint[]): void {
  for (let i = 1; i < ids.length; i++)
    if (!((ids[i] as bigint) > (ids[i - 1] as bigint))) throw new Error(`not increasing at ${i}: ${ids[i - 1]} then ${ids[i]}`);
}

/**
 * Marks a snowflake sequence's state in Redis as written on the current node, as a sequence in use
 * finds it: without it, a lease taken without MongoDB's first-lease record (as these tests take them)
 * holds off one TTL (a missing state counts as lost, lua/acquireLease-2.lua). One command, so it is
 * queued before whatever the test sends next.
 */
export function knownSnowflakeState(redis: Redis, sequence: string): Promise<unknown> {
  const lua = `redis.call("HSET", KEYS[1], "node", string.match(redis.call("INFO", "replication"), "master_replid:(%w+)"))`;
  return redis.eval(lua, 1, snowflakeUntilKey(sequence));
}
