/**
 * A Redis client under Sentinel that does not give up by itself. ioredis (6.0) ends a Sentinel
 * connection for good when its connector is disconnected while it asks the sentinels for the primary
 * — which is what its failover detector does on a +switch-master announcement that arrives while
 * the client is reconnecting after the old primary died: the connector throws "Connection is
 * closed.", the client's status becomes `end`, and every later command fails with that message (a
 * chaos run on the cluster profile caught a worker answering UNAVAILABLE for good after a failover).
 * This client connects again after such an end, unless it was closed with `disconnect()`; ends in a
 * row (no sentinel answering) wait twice as long each time, up to a few seconds, until one connects.
 *
 * ioredis also reports every round in which no Sentinel led it to a primary as "All sentinels are
 * unreachable. Retrying from scratch after N ms." — also when only the primary died and the
 * Sentinels are electing a new one. That error is passed on in idd's words (`sentinelRetryMessage`),
 * ioredis's message as its cause: the client connects again by itself.
 */
import { Redis, type RedisOptions } from "ioredis";

/** The pause before connecting again after ioredis ended the connection by itself, and its cap. */
const RECONNECT_AFTER_END_MS = 100;
const RECONNECT_AFTER_END_MAX_MS = 5000;

const ALL_UNREACHABLE = /^All sentinels are unreachable\. Retrying from scratch after (\d+)ms\.(?: Last error: (.*))?/s;

/**
 * idd's words for ioredis's "All sentinels are unreachable. Retrying …" (a round in which no
 * Sentinel led to a primary, which ioredis tries again by itself); undefined for any other message.
 */
export function sentinelRetryMessage(message: string): string | undefined {
  const m = ALL_UNREACHABLE.exec(message);
  if (!m) return undefined;
  return `no Redis primary reachable through the Sentinels yet (a failover may be under way); connecting again in ${m[1]} ms${m[2] ? ` (last: ${m[2]})` : ""}`;
}

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

  override emit(event: string | symbol, ...args: unknown[]): boolean {
    const e = args[0];
    const says = event === "error" && e instanceof Error ? sentinelRetryMessage(e.message) : undefined;
    return says ? super.emit(event, new Error(says, { cause: e })) : super.emit(event, ...args);
  }

  override disconnect(reconnect = false): void {
    if (!reconnect) this.#closed = true;
    super.disconnect(reconnect);
  }
}
