/** A test's own Redis connection, with idd's scripts registered (as src/redis/client.ts does for idd). */
import { Redis, type RedisOptions } from "ioredis";
import { defineScripts, type ScriptedRedis } from "../../src/redis/scripts.js";

export function scriptClient(url: string, options: RedisOptions = {}): ScriptedRedis<Redis> {
  return defineScripts(new Redis(url, options));
}
