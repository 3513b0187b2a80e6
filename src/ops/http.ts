/**
 * The worker's HTTP surface, read-only: `/metrics` (Prometheus text), `/healthz` (the process is
 * alive and its event loop turns: 200) and `/readyz` (200 when ready, 503 otherwise, with the
 * reasons as JSON). Off unless IDD_HTTP_PORT is set; bound to IDD_HTTP_HOST, loopback by default.
 * With a token (IDD_HTTP_TOKEN), every path but the two probes and the status page's static shell
 * wants `Authorization: Bearer <token>` (401 otherwise): probes stay plain for kubelets and load
 * balancers, and say only up or not; the page holds no data and sends the token it is given in its
 * URL fragment (`/status#token=…`, never sent to the server or logged) with every poll.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import type { Secret } from "../config/secret.js";
import type { Readiness } from "./readiness.js";
import type { StatusSnapshot } from "./status.js";
import { STATUS_PAGE } from "./status-page.js";

/** The page may run its own inline script and style and talk to this server only: nothing loads from elsewhere. */
const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'",
  "x-content-type-options": "nosniff",
  "cache-control": "no-store",
};

/** Paths answered without the token. */
export const OPEN_PATHS: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/status"]);

const digest = (s: string) => createHash("sha256").update(s).digest();

/** Compares digests, so the time taken says nothing about the token, not even its length. */
function authorized(req: IncomingMessage, expected: Buffer): boolean {
  const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? "");
  return m !== null && timingSafeEqual(digest(m[1] as string), expected);
}

export interface OpsServer {
  /** The port it listens on (useful with port 0 in tests). */
  port: number;
  close(): Promise<void>;
}

export async function startOpsServer(o: {
  host: string;
  port: number;
  metrics: Registry;
  readiness: Readiness;
  token?: Secret;
  status: () => Promise<StatusSnapshot>;
}): Promise<OpsServer> {
  const expected = o.token && digest(o.token.reveal());
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] as string;
    if (expected && !OPEN_PATHS.has(path) && !authorized(req, expected)) {
      res.writeHead(401, { "www-authenticate": 'Bearer realm="idd"', "content-type": "text/plain" }).end("unauthorized\n");
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    if (path === "/healthz") {
      res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
      return;
    }
    if (path === "/readyz") {
      const state = o.readiness.state();
      res.writeHead(state.ready ? 200 : 503, { "content-type": "application/json" }).end(`${JSON.stringify(state)}\n`);
      return;
    }
    if (path === "/metrics") {
      o.metrics.metrics().then(
        (text) => res.writeHead(200, { "content-type": o.metrics.contentType }).end(text),
        (e: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(`metrics failed: ${(e as Error).message}\n`),
      );
      return;
    }
    // The status page (for people) and the snapshot it polls (also read by `idd status --url`).
    if (path === "/status") {
      res.writeHead(200, PAGE_HEADERS).end(STATUS_PAGE);
      return;
    }
    if (path === "/status.json") {
      o.status().then(
        (s) => res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(s)),
        (e: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(`status failed: ${(e as Error).message}\n`),
      );
      return;
    }
    res.writeHead(404, { "content-type": "text/plain" }).end("not found: try /status, /status.json, /metrics, /healthz, /readyz\n");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
