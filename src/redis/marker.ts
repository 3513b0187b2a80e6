/**
 * The Redis state marker (`MARKER_KEY`): present in a Redis whose counters idd may trust, checked by
 * every script that hands out or creates numbers. Written once by a brand-new installation and
 * again by a full replay; a Redis that restarted empty or was flushed lacks it (docs/design.md §5.6).
 */
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { MARKER_AT_KEY, MARKER_KEY } from "./keys.js";

/** The marker claims must present; null when Redis has none. */
export function readMarker(redis: Redis): Promise<string | null> {
  return redis.get(MARKER_KEY);
}

export async function hasMarker(redis: Redis): Promise<boolean> {
  return (await redis.exists(MARKER_KEY)) === 1;
}

/**
 * Writes a fresh marker, `<origin>:<random>`, unless Redis has one; returns whether it wrote. When it
 * did, the time is written too (`MARKER_AT_KEY`): snowflake leases vanished with the data, and their
 * holders may issue until their local validity ends, so new holders wait a TTL after it.
 */
export async function writeMarker(redis: Redis, origin: "new" | "replay"): Promise<boolean> {
  const written = (await redis.set(MARKER_KEY, `${origin}:${randomUUID()}`, "NX")) === "OK";
  if (written) await redis.set(MARKER_AT_KEY, String(Date.now()));
  return written;
}
