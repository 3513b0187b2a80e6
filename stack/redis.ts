/**
 * The stack's redis-server processes (Debian's binary): the default profile's two, and the cluster
 * profile's (stack/cluster.ts) with arguments of their own. No persistence anywhere: the stack's
 * Redis is a cache that replay rebuilds, as in production.
 */
import { mkdirSync } from "node:fs";
import { connect } from "node:net";
import { Redis } from "ioredis";
import { which } from "./install.js";
import { dataDir, type ServiceName, type StackLayout } from "./paths.js";
import type { ServiceSpec } from "./service-spec.js";

/**
 * A redis-server on `port` (of the layout); with `password`, requirepass (the secured one); `extra`
 * adds arguments (replication, cluster mode). Ready once it answers PING.
 */
export function redisServer(
  name: ServiceName,
  port: (l: StackLayout) => number,
  opts: { password?: (l: StackLayout) => string; extra?: (l: StackLayout, dir: string) => string[] } = {},
): ServiceSpec {
  const { password } = opts;
  return {
    ports: (l) => [port(l)],
    async prepare(l) {
      const dir = dataDir(l, name);
      mkdirSync(dir, { recursive: true });
      return {
        cmd: which("redis-server") ?? "redis-server",
        cwd: dir,
        args: [
          "--bind",
          "127.0.0.1",
          "--port",
          String(port(l)),
          "--dir",
          dir,
          "--save",
          "",
          "--appendonly",
          "no",
          "--protected-mode",
          "yes",
          ...(password ? ["--requirepass", password(l)] : []),
          ...(opts.extra?.(l, dir) ?? []),
        ],
      };
    },
    ready: (l) =>
      new Promise((resolve) => {
        const socket = connect({ host: "127.0.0.1", port: port(l) });
        let got = "";
        const done = (ok: boolean) => {
          socket.destroy();
          resolve(ok);
        };
        socket.setTimeout(1000, () => done(false));
        socket.once("error", () => done(false));
        socket.once("connect", () => socket.write(`${password ? `AUTH ${password(l)}\r\n` : ""}PING\r\n`));
        socket.on("data", (d) => {
          got += d.toString("latin1");
          if (got.endsWith("\r\n") && got.split("\r\n").length > (password ? 2 : 1)) done(got.endsWith("+PONG\r\n"));
        });
      }),
  };
}

/** One command to the Redis (or Sentinel) on `port`, on a connection of its own that fails fast. */
export async function redisCall(port: number, ...args: (string | number)[]): Promise<unknown> {
  const r = new Redis({
    host: "127.0.0.1",
    port,
    lazyConnect: true,
    connectTimeout: 1000,
    commandTimeout: 2000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  r.on("error", () => {});
  try {
    await r.connect();
    return await r.call(String(args[0]), ...args.slice(1).map(String));
  } finally {
    r.disconnect();
  }
}

/** `INFO section` as fields. */
export async function redisInfo(port: number, section: string): Promise<Record<string, string>> {
  const text = String(await redisCall(port, "INFO", section));
  return Object.fromEntries(
    text
      .split("\r\n")
      .filter((line) => line.includes(":"))
      .map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 1)]),
  );
}
