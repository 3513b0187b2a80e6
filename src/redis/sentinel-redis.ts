/**
 * A Redis client under Sentinel that does not give up by itself. ioredis (6.0) ends a Sentinel
 * connection for good when its connector is disconnected while it asks the sentinels for the primary
 * — which is what its failover detector does on a +switch-master announcement that arrives while
 * the client is reconnecting after the old primary died: the connector throws "Connection is
 * closed.", the client's status becomes `end`, and every later command fails with that message (a
 * chaos run on the cluster profile caught a worker answering UNAVAILABLE for good after a failover).
 * This client connects again after such an end, unless it was closed with `disconnect()`; ends in a
 * row (no sentinel answering) wait twice as long each time, up to a few seconds, until one connects.
 */
import { Redis, type RedisOptions } from "ioredis";

/** The pause before connecting again after ioredis ended the connection by itself, and its cap. */
const RECONNECT_AFTER_END_MS = 100;
const RECONNECT_AFTER_END_MAX_MS = 5000;

export class SentinelRedis extends Redis {
  #closed = false;
  #pauseMs = RECONNECT_AFTER_END_MS;

  constructor(options: RedisOptions) {
    super(options as RedisOptions & { replyMapping?: "legacy" }); // idd never asks for RESP3 maps
    this.on("ready", () => {
      this.#pauseMs = RECONNECT_AFTER_END_MS;
    });
    this.on("end", () => {
      if (this.#closed) return;
      const pause = this.#pauseMs;
      this.#pauseMs = Math.min(pause * 2, RECONNECT_AFTER_END_MAX_MS);
      setTimeout(() => {
        if (!this.#closed && this.status === "end") this.connect().catch(() => {}); // failures go to "error" and retry as usual
      }, pause).unref();
    });
  }

  override disconnect(reconnect = false): void {
    if (!reconnect) this.#closed = true;
    super.disconnect(reconnect);
  }
}
