/**
 * Redis over TLS, for real: a redis-server of the test's own serving only TLS, with the local stack's
 * server certificate (stack/tls.ts: made with openssl, signed by the stack's CA). `idd replay`
 * reaches it through `rediss://` when REDIS_CA_FILE names the CA (and a password in the URL), and
 * refuses it with one line when the CA is not given: the server's certificate is then not trusted.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { createRedis } from "../../src/redis/client.js";
import { which } from "../../stack/install.js";
import { layoutFromEnv } from "../../stack/paths.js";
import { stackTls } from "../../stack/tls.js";
import { runIdd } from "../support/cli.js";
import { freePort } from "../support/private-redis.js";
import { serviceEnv } from "../support/workers.js";

const dir = mkdtempSync(join(tmpdir(), "idd-tls-"));
const tls = stackTls(layoutFromEnv());
const password = `tls-${randomUUID()}`;
let port = 0;
let server: ChildProcess | undefined;

beforeAll(async () => {
  port = await freePort();
  const bin = which("redis-server") ?? "redis-server";
  server = spawn(
    bin,
    [
      ...["--port", "0", "--tls-port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
      ...["--tls-cert-file", tls.serverCertFile, "--tls-key-file", tls.serverKeyFile],
      ...["--tls-ca-cert-file", tls.caFile, "--tls-auth-clients", "no", "--requirepass", password],
    ],
    { stdio: "ignore" },
  );
  for (let i = 0; ; i++) {
    const probe = createRedis(`rediss://:${password}@127.0.0.1:${port}`, {
      ca: readFileSync(tls.caFile, "utf8"),
      options: { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null },
    });
    try {
      await probe.connect();
      expect(await probe.ping()).toBe("PONG");
      break;
    } catch (e) {
      if (i > 100) throw e;
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      probe.disconnect();
    }
  }
}, 30_000);

afterAll(() => {
  server?.kill("SIGKILL");
});

const idd = (args: string[], env: NodeJS.ProcessEnv) => runIdd(args, { ...serviceEnv(inject("services")), ...env });

test("idd replay over rediss:// with REDIS_CA_FILE; without the CA, one line and exit 2; the password never printed", async () => {
  const url = `rediss://:${password}@127.0.0.1:${port}`;
  const db = new URL(inject("services").mongodbUrl);
  db.pathname = `/tls_${randomUUID().replaceAll("-", "")}`;
  const env = { MONGODB_URL: db.toString(), REDIS_URL: url };
  expect((await idd(["seq", "create", "tls-seq"], env)).status).toBe(0);
  const ok = await idd(["replay", "--settle-ms", "1"], { ...env, REDIS_CA_FILE: tls.caFile });
  expect(ok.stderr).toMatch(/replay: .*counters/);
  expect(ok.status).toBe(0);
  const untrusted = await idd(["replay", "--settle-ms", "1"], { ...env, REDIS_CA_FILE: "" });
  expect(untrusted.status).toBe(2);
  const lines = untrusted.stderr.trim().split("\n");
  expect(lines.at(-1)).toMatch(
    /^idd: REDIS_TLS_FAILED: Redis at rediss:\/\/:\*\*\*@127\.0\.0\.1:\d+: its certificate is not trusted \(.+\); set REDIS_CA_FILE/,
  );
  for (const out of [ok, untrusted]) expect(out.stdout + out.stderr).not.toContain(password);
}, 120_000);
