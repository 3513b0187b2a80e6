/**
 * A process that holds a snowflake worker-id lease and issues one id every 2 ms to stdout, for the
 * pause test (pause.test.ts): `ID <id>` per id. When its lease lapses it prints `LOST <message>`,
 * tries once to acquire again, prints `REACQUIRED <id>` or `NOFREE`, and exits.
 * Settings from the environment: REDIS_URL, SNOW_SEQUENCE, SNOW_TTL_MS.
 */
import { isIddError } from "../../../../src/core/errors.js";
import { SnowflakeGenerator } from "../../../../src/issuing/sources/snowflake/generator.js";
import { WorkerLease } from "../../../../src/issuing/sources/snowflake/lease.js";
import { scriptClient } from "../../../support/redis.js";
import { layoutWith } from "./support.js";

const say = (line: string) => process.stdout.write(`${line}\n`);
const env = (k: string) => process.env[k] ?? `missing ${k}`;
const ttlMs = Number(env("SNOW_TTL_MS"));
const redis = scriptClient(env("REDIS_URL"));
const lease = new WorkerLease({
  redis,
  sequence: env("SNOW_SEQUENCE"),
  workerBits: 1,
  preferWorkerId: 0,
  ttlMs,
  renewEveryMs: Math.floor(ttlMs / 4),
  marginMs: Math.floor(ttlMs / 6),
});
const grant = await lease.acquire();
say(`ACQUIRED ${grant.workerId}`);
const generator = new SnowflakeGenerator({ layout: layoutWith(1), lease });

const timer = setInterval(async () => {
  try {
    for (const r of generator.take(1)) say(`ID ${r.first}`);
  } catch (e) {
    if (!isIddError(e, "LEASE_LOST")) throw e;
    clearInterval(timer);
    say(`LOST ${e.message}`);
    try {
      say(`REACQUIRED ${(await lease.acquire()).workerId}`);
    } catch (e2) {
      say(isIddError(e2, "WORKER_IDS_EXHAUSTED") ? "NOFREE" : `ERROR ${String(e2)}`);
    }
    lease.abandon();
    redis.disconnect();
  }
}, 2);
