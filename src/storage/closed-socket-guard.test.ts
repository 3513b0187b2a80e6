/**
 * The driver's hang that closed-socket-guard.ts exists for, and the guard: a command written to a
 * connection whose socket Node already destroyed, before the socket's `close` reached the driver.
 * The sockets are real TCP sockets to a listener on loopback; the first test runs the driver's own
 * writeCommand.
 */
import { once } from "node:events";
import { createRequire } from "node:module";
import { type AddressInfo, connect, createServer, type Server, type Socket } from "node:net";
import { MongoNetworkError } from "mongodb";
import { afterAll, beforeAll, expect, onTestFinished, test } from "vitest";
import { driverConnectionClass, guardClosedSockets, UNGUARDED } from "./closed-socket-guard.js";

const require = createRequire(import.meta.url);
const { ns } = require("mongodb/lib/utils.js") as { ns: (s: string) => unknown };

interface Conn {
  socket: Socket;
  command(ns: unknown, cmd: object, options: object): Promise<unknown>;
}

let server: Server;
let received = 0;
const peers: Socket[] = [];

beforeAll(async () => {
  server = createServer((s) => {
    peers.push(s);
    s.on("data", (d) => {
      received += d.length;
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
});

afterAll(async () => {
  for (const p of peers) p.destroy();
  server.close();
});

/** A driver connection on a fresh socket to the listener, which reads and never answers. */
async function connection(): Promise<Conn> {
  const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
  await once(socket, "connect");
  const Connection = driverConnectionClass() as unknown as new (s: Socket, o: object) => Conn;
  return new Connection(socket, { id: 1, generation: 0 });
}

/** How a promise settled within `ms`: "pending" if it did not. */
async function settled(p: Promise<unknown>, ms: number): Promise<"pending" | "resolved" | Error> {
  return Promise.race([
    p.then(
      () => "resolved" as const,
      (e: Error) => e,
    ),
    new Promise<"pending">((r) => setTimeout(() => r("pending"), ms)),
  ]);
}

test("without the guard, a command written to a destroyed socket never settles (the driver's hang)", async () => {
  // The driver is loaded once per test process: another file may have guarded it already.
  const proto = driverConnectionClass().prototype as unknown as Record<string | symbol, unknown>;
  const guarded = proto.writeCommand;
  if (proto[UNGUARDED]) proto.writeCommand = proto[UNGUARDED];
  onTestFinished(() => {
    proto.writeCommand = guarded;
  });
  const conn = await connection();
  conn.socket.destroy();
  const closed = once(conn.socket, "close");
  const cmd = conn.command(ns("admin.$cmd"), { hello: 1 }, {});
  await closed;
  // The socket is closed and the driver has seen it (its `close` handler ran): still pending.
  expect(await settled(cmd, 500)).toBe("pending");
});

test("with the guard, that command fails with a network error at once", async () => {
  guardClosedSockets();
  guardClosedSockets(); // once per process: a second call changes nothing
  const conn = await connection();
  conn.socket.destroy();
  const outcome = await settled(conn.command(ns("admin.$cmd"), { hello: 1 }, {}), 500);
  expect(outcome).toBeInstanceOf(MongoNetworkError);
  expect((outcome as Error).message).toMatch(/^connection 1 to .* closed$/);
});

test("with the guard, a live socket's command goes out, and fails when the server closes it", async () => {
  guardClosedSockets();
  const conn = await connection();
  const before = received;
  const cmd = conn.command(ns("admin.$cmd"), { hello: 1 }, {});
  while (received === before) await new Promise((r) => setTimeout(r, 5));
  expect(await settled(cmd, 100)).toBe("pending"); // written, waiting for an answer
  peers.at(-1)?.destroy();
  expect(await settled(cmd, 2000)).toBeInstanceOf(MongoNetworkError);
});
