/**
 * One patch of the MongoDB driver (7.x), put in place by one explicit call (`guardClosedSockets`,
 * made by every MongoConnection): a command written to a connection whose socket is already
 * destroyed, or is destroyed before the write drained, fails with a network error instead of
 * waiting forever.
 *
 * Why: the driver's `Connection.writeCommand` waits for the socket's `drain` when `write` returns
 * false. A socket Node has destroyed (the server closed it: a MongoDB stopped, restarted, or cut)
 * returns false and emits neither `drain` nor `error`; the driver only learns of it at the socket's
 * `close`, a moment later. A command written in that moment never settles. When it is the server
 * monitor's `hello`, the monitor stays "checking" for good: the server stays Unknown, every server
 * selection of that client times out, and the process never reaches MongoDB again although it is
 * back (the chaos profile's mongodb-outage, about 1 run in 8: a young worker 64 s without MongoDB
 * after an 8 s outage). A monitor's check starts exactly then, asked for by the pool connection
 * that saw the close first.
 *
 * The driver's class is reached by its file (the package has no exports map); the test
 * (closed-socket-guard.test.ts) fails when that file or method moves, and shows the hang without
 * the patch on a real socket.
 */
import { createRequire } from "node:module";
import { MongoNetworkError } from "mongodb";

/** On the driver's prototype once guarded: its own writeCommand (shared by every copy of this module). */
export const UNGUARDED = Symbol.for("idd.mongodb.unguardedWriteCommand");

interface DriverConnection {
  id: number | string;
  address: string;
  socket: NodeJS.EventEmitter & { destroyed: boolean };
  onError(e: Error): void;
  writeCommand(...args: unknown[]): Promise<unknown>;
  [UNGUARDED]?: (...args: unknown[]) => Promise<unknown>;
}

const require = createRequire(import.meta.url);

/** The driver's connection class (mongodb/lib/cmap/connection.js). */
export function driverConnectionClass(): { prototype: DriverConnection } {
  const { Connection } = require("mongodb/lib/cmap/connection.js") as { Connection?: { prototype: DriverConnection } };
  if (typeof Connection?.prototype?.writeCommand !== "function")
    throw new Error("mongodb driver: Connection.writeCommand not found in lib/cmap/connection.js (closed-socket-guard.ts needs updating)");
  return Connection;
}

/** Puts the guard in place (once per process). */
export function guardClosedSockets(): void {
  const proto = driverConnectionClass().prototype;
  if (proto[UNGUARDED]) return;
  const write = proto.writeCommand;
  proto[UNGUARDED] = write;
  proto.writeCommand = function guardedWrite(this: DriverConnection, ...args: unknown[]): Promise<unknown> {
    const socket = this.socket;
    const closed = () => {
      const e = new MongoNetworkError(`connection ${this.id} to ${this.address} closed`);
      this.onError(e);
      return e;
    };
    if (socket.destroyed) return Promise.reject(closed());
    let onClose: (() => void) | undefined;
    const gone = new Promise<never>((_, reject) => {
      onClose = () => reject(closed());
      socket.once("close", onClose);
    });
    return Promise.race([write.apply(this, args), gone]).finally(() => socket.off("close", onClose as () => void));
  };
}
