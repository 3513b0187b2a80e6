/**
 * The network-fault harness (stack/netfaults.ts) on real processes: a Redis running as one host
 * user, clients running as the other, a partition that silences an established connection and
 * refuses a new one, a heal after which both work, a cut of one service's port only, toxiproxy's
 * latency on one host's link and a cut of that routed link, and libfaketime's offset seen by a child
 * node process, fixed or stepped while it runs (a clock file). Needs root
 * (nftables, users); skipped otherwise. Its own table, ports (stack base + 900…) and folder.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import {
  fakeTimeEnv,
  fakeTimeFileEnv,
  type Host,
  type Identity,
  killHostProcesses,
  MACHINE_LOCK,
  type Netfaults,
  setFakeTime,
  setupNetfaults,
} from "../../stack/netfaults.js";
import { layoutFromEnv } from "../../stack/paths.js";

const root = process.getuid?.() === 0;
const layout = layoutFromEnv();
const base = layout.ports.redis + 521; // stack base + 900
const REDIS = base; // runs as side-a
const KAFKA_STANDIN = base + 1; // a second service (root, like Kafka): what a cut of "Kafka only" cuts

let nf: Netfaults;
let dir: string;
const procs: ChildProcess[] = [];

function redisServer(port: number, id?: Identity): ChildProcess {
  const p = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], {
    stdio: "ignore",
    ...(id && { uid: id.uid, gid: id.gid }),
  });
  procs.push(p);
  return p;
}

/**
 * A client process running as `host`: a raw RESP connection kept open, and new connections on
 * demand. Commands over stdin ("old PING", "new <port> PING"), one JSON line per answer on stdout:
 * the reply, or the error, or nothing within `timeoutMs` (a silent link).
 */
class HostClient {
  readonly proc: ChildProcess;
  #buf = "";
  #waiters: ((line: string) => void)[] = [];
  constructor(id: Identity, port: number, env: NodeJS.ProcessEnv = {}) {
    const script = `
      const net = require("node:net");
      const ask = (sock, cmd, timeoutMs) => new Promise((res) => {
        const t0 = performance.now();
        const t = setTimeout(() => { sock.off("data", on); res({ silent: true, ms: performance.now() - t0 }); }, timeoutMs);
        const on = (d) => { clearTimeout(t); sock.off("data", on); res({ reply: d.toString().trim().replace(/^\\+/, ""), ms: performance.now() - t0 }); };
        sock.on("data", on);
        sock.write(cmd + "\\r\\n");
      });
      const old = net.connect(${port}, "127.0.0.1");
      let oldErr; old.on("error", (e) => { oldErr = e.code; }); old.on("close", () => { oldErr ??= "closed"; });
      const out = (o) => process.stdout.write(JSON.stringify(o) + "\\n");
      let q = Promise.resolve();
      require("node:readline").createInterface({ input: process.stdin }).on("line", (line) => { q = q.then(async () => {
        const [what, a, b] = line.split(" ");
        if (what === "now") {
          const now = Date.now(), mono = performance.now(), hr = Number(process.hrtime.bigint() / 1000000n);
          await new Promise((r) => setTimeout(r, 500));
          return out({ now, mono: hr, perfRate: (performance.now() - mono) / (Date.now() - now) });
        }
        if (what === "old") return out(oldErr ? { error: oldErr } : await ask(old, a, Number(b)));
        // new <port> <timeoutMs>: a fresh connection, PING, close
        const s = net.connect(Number(a), "127.0.0.1");
        const t0 = performance.now();
        const r = await new Promise((res) => {
          const t = setTimeout(() => res({ silent: true, ms: performance.now() - t0 }), Number(b));
          s.once("error", (e) => { clearTimeout(t); res({ error: e.code }); });
          s.once("connect", () => ask(s, "PING", Number(b)).then((x) => { clearTimeout(t); res({ ...x, ms: performance.now() - t0 }); }));
        });
        s.destroy();
        out(r);
      }); });
    `;
    this.proc = spawn(process.execPath, ["-e", script], {
      uid: id.uid,
      gid: id.gid,
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "inherit"],
    });
    procs.push(this.proc);
    this.proc.stdout?.on("data", (d: Buffer) => {
      this.#buf += d.toString();
      for (let i = this.#buf.indexOf("\n"); i >= 0; i = this.#buf.indexOf("\n")) {
        const line = this.#buf.slice(0, i);
        this.#buf = this.#buf.slice(i + 1);
        this.#waiters.shift()?.(line);
      }
    });
  }
  ask(
    line: string,
  ): Promise<{ reply?: string; silent?: boolean; error?: string; ms?: number; now?: number; mono?: number; perfRate?: number }> {
    return new Promise((res) => {
      this.#waiters.push((l) => res(JSON.parse(l)));
      this.proc.stdin?.write(`${line}\n`);
    });
  }
  old = (timeoutMs = 1500) => this.ask(`old PING ${timeoutMs}`);
  fresh = (port: number, timeoutMs = 1500) => this.ask(`new ${port} ${timeoutMs}`);
}

let a: HostClient; // side-a, like the Redis
let b: HostClient; // side-b

beforeAll(async () => {
  if (!root) return;
  dir = mkdtempSync(join(tmpdir(), "idd-netfaults-"));
  nf = await setupNetfaults({ layout, table: "idd_netfaults_test", toxiproxyPort: base + 10 });
  const sideA = nf.identity("side-a");
  chownSync(dir, sideA.uid, sideA.gid);
  redisServer(REDIS, sideA);
  redisServer(KAFKA_STANDIN);
  const pong = async (port: number) => {
    const r = new Redis({ port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    try {
      await r.connect();
      return (await r.ping()) === "PONG";
    } catch {
      return false;
    } finally {
      r.disconnect();
    }
  };
  for (let i = 0; i < 50 && !((await pong(REDIS)) && (await pong(KAFKA_STANDIN))); i++) await sleep(100);
  a = new HostClient(sideA, REDIS);
  b = new HostClient(nf.identity("side-b"), REDIS);
});

afterAll(async () => {
  if (!root) return;
  for (const p of procs) p.kill("SIGKILL");
  await nf?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

test.skipIf(!root)("one run per machine: the set-up harness holds the machine-wide lock under this process's pid", () => {
  expect(readFileSync(MACHINE_LOCK, "utf8").trim()).toBe(String(process.pid));
});

test.skipIf(!root)("a partition silences established connections and refuses new ones; heal restores both", async () => {
  expect(await b.old()).toMatchObject({ reply: "PONG" });
  expect(await a.old()).toMatchObject({ reply: "PONG" });

  nf.partition(["side-a"], ["side-b"]);
  // Across the partition: the open connection answers nothing and reports no error (no RST), a new one never connects.
  const silent = await b.old(1500);
  expect(silent).toMatchObject({ silent: true });
  expect(await b.fresh(REDIS, 1500)).toMatchObject({ silent: true });
  // Within a side, and to services of neither side, everything works.
  expect(await a.old()).toMatchObject({ reply: "PONG" });
  expect(await b.fresh(KAFKA_STANDIN)).toMatchObject({ reply: "PONG" });

  nf.heal();
  // The old connection is still open: the PING sent during the partition is retransmitted and answered.
  const after = await b.old(5000);
  expect(after.error).toBeUndefined();
  expect(after.reply).toMatch(/PONG/);
  expect(await b.fresh(REDIS)).toMatchObject({ reply: "PONG" });
});

test.skipIf(!root)("a cut takes one host from one service only", async () => {
  nf.cut("side-b", [KAFKA_STANDIN]);
  expect(await b.fresh(KAFKA_STANDIN, 1500)).toMatchObject({ silent: true });
  expect(await b.fresh(REDIS)).toMatchObject({ reply: "PONG" });
  expect(await b.old()).toMatchObject({ reply: "PONG" });
  expect(await a.fresh(KAFKA_STANDIN)).toMatchObject({ reply: "PONG" });
  nf.heal();
  expect(await b.fresh(KAFKA_STANDIN)).toMatchObject({ reply: "PONG" });
});

test.skipIf(!root)("uncut lifts one host's cuts and leaves a partition standing (a zombie inside a split)", async () => {
  nf.partition(["side-a"], ["side-b"]);
  nf.cut("side-b", [KAFKA_STANDIN]);
  expect(await b.fresh(KAFKA_STANDIN, 1500)).toMatchObject({ silent: true });
  nf.uncut("side-b");
  expect(await b.fresh(KAFKA_STANDIN)).toMatchObject({ reply: "PONG" });
  expect(await b.fresh(REDIS, 1500)).toMatchObject({ silent: true }); // still partitioned from side A's Redis
  nf.heal();
  expect(await b.fresh(REDIS)).toMatchObject({ reply: "PONG" });
});

test.skipIf(!root)("toxiproxy adds latency to one host's link only, under the same address", async () => {
  const h: Host = "h1";
  await nf.route(h, [REDIS]);
  const c = new HostClient(nf.identity(h), REDIS); // connects after route: through the proxy
  expect(await c.old()).toMatchObject({ reply: "PONG" });
  await nf.latency(h, 200, 100);
  const replies: Awaited<ReturnType<HostClient["old"]>>[] = [];
  for (let i = 0; i < 5; i++) replies.push(await c.old(3000));
  expect(
    replies.filter((r) => r.reply !== "PONG"),
    "each ping through the proxy answered",
  ).toEqual([]);
  const ms = replies.map((r) => r.ms ?? 0);
  const direct = (await b.fresh(REDIS)).ms ?? Number.POSITIVE_INFINITY;
  const avg = ms.reduce((x, y) => x + y, 0) / ms.length;
  console.info(`latency 200±100 ms through toxiproxy: ${ms.map((m) => m.toFixed(0)).join(", ")} ms (direct ${direct.toFixed(1)} ms)`);
  expect(avg).toBeGreaterThanOrEqual(150);
  expect(direct).toBeLessThan(100);
  await nf.calm();
  expect((await c.old()).ms).toBeLessThan(100);
});

test.skipIf(!root)("a cut of a link routed through toxiproxy silences it between the host and its proxy", async () => {
  const h: Host = "h1";
  await nf.route(h, [REDIS]); // routed already by the latency test: kept
  const c = new HostClient(nf.identity(h), REDIS);
  expect(await c.old()).toMatchObject({ reply: "PONG" });
  nf.cut(h, [REDIS]);
  expect(await c.old(1500)).toMatchObject({ silent: true });
  expect(await c.fresh(REDIS, 1500)).toMatchObject({ silent: true });
  expect(await b.fresh(REDIS)).toMatchObject({ reply: "PONG" }); // another host's link stays
  nf.uncut(h);
  expect((await c.old(5000)).reply).toMatch(/PONG/);
});

test.skipIf(!root)("a clock file steps a running node process's wall clock, not its monotonic clock", async () => {
  const clocks = mkdtempSync(join(tmpdir(), "idd-clock-"));
  chmodSync(clocks, 0o755);
  const file = join(clocks, "clock-h2");
  try {
    const c = new HostClient(nf.identity("h2"), KAFKA_STANDIN, fakeTimeFileEnv(nf.tools, file));
    const skew = async () => {
      const t = Date.now();
      const hr = Number(process.hrtime.bigint() / 1000000n);
      const r = await c.ask("now");
      return { wall: (r.now ?? 0) - t, mono: (r.mono ?? 0) - hr };
    };
    expect(Math.abs((await skew()).wall)).toBeLessThan(1000);
    setFakeTime(file, "-10s");
    await sleep(1500); // read again within a second (FAKETIME_CACHE_DURATION=1)
    const back = await skew();
    expect(Math.abs(back.wall + 10_000)).toBeLessThan(1000);
    expect(Math.abs(back.mono)).toBeLessThan(1000);
    setFakeTime(file, "+1h");
    await sleep(1500);
    expect(Math.abs((await skew()).wall - 3600_000)).toBeLessThan(1000);
    c.proc.kill();
  } finally {
    rmSync(clocks, { recursive: true, force: true });
  }
});

test.skipIf(!root)("libfaketime shifts a child node process's Date.now and performance.now", async () => {
  const skews = async (offset: string) => {
    const c = new HostClient(nf.identity("h2"), KAFKA_STANDIN, fakeTimeEnv(nf.tools, offset));
    const t = Date.now();
    const hr = Number(process.hrtime.bigint() / 1000000n);
    const r = await c.ask("now");
    c.proc.kill();
    return { wall: (r.now ?? 0) - t, mono: (r.mono ?? 0) - hr, perfRate: r.perfRate ?? 0 };
  };
  const ahead = await skews("+3600s");
  // Date.now shifted by the offset; the monotonic clock (performance.now, process.hrtime) is faked
  // too: its value moves, its rate does not (durations measured inside the process stay true).
  expect(Math.abs(ahead.wall - 3600_000)).toBeLessThan(2000);
  expect(Math.abs(ahead.mono)).toBeGreaterThan(2000);
  expect(ahead.perfRate).toBeGreaterThan(0.8);
  expect(ahead.perfRate).toBeLessThan(1.3);
  const back = await skews("-10s");
  expect(Math.abs(back.wall + 10_000)).toBeLessThan(2000);
});

test.skipIf(!root)("cleanup leaves no table, no toxiproxy, no process of a host user", async () => {
  await nf.cleanup();
  expect(nf.rules()).toBe("");
  expect(killHostProcesses(nf.tools.users)).toEqual([]);
  // setup again (as the next run would) removes what is left and starts clean
  nf = await setupNetfaults({ layout, table: "idd_netfaults_test", toxiproxyPort: base + 10 });
  expect(nf.rules()).toContain("chain faults");
});
