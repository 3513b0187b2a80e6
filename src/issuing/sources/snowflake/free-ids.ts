/**
 * How many worker ids of a snowflake sequence are free: every id ever leased has a bound in
 * `{seq:<name>}:until` and a lease key while it is held (lua/acquireLease-2.lua), so one HKEYS and
 * one EXISTS per id ever leased (one per worker that held one), pipelined in the sequence's slot.
 * Read by the worker's capacity watch every IDD_SAMPLE_MS and by `idd seq show`; never per id issued.
 */
import type { RedisClient } from "../../../redis/client-type.js";
import { snowflakeLeaseKey, snowflakeUntilKey } from "../../../redis/keys.js";

export async function freeWorkerIds(redis: RedisClient, sequence: string, workerBits: number): Promise<number> {
  const ids = (await redis.hkeys(snowflakeUntilKey(sequence))).filter((f) => /^\d+$/.test(f)); // also holds node, holdoff
  if (ids.length === 0) return 2 ** workerBits;
  const pipe = redis.pipeline();
  for (const id of ids) pipe.exists(snowflakeLeaseKey(sequence, Number(id)));
  const held = ((await pipe.exec()) ?? []).filter(([err, n]) => !err && n === 1).length;
  return 2 ** workerBits - held;
}
