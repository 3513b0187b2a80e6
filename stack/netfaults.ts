/**
 * Network faults between real processes on this machine (issue #28): packet-level partitions and
 * cut links on loopback, latency through toxiproxy, a shifted clock through libfaketime.
 *
 * **Hosts are uids.** A process that takes part runs under one of a few system users (`idd-side-a`,
 * `idd-side-b`, `idd-h1`…`idd-h4`, created once): that user is its "host". Kafka, MongoDB and
 * everything else runs as it does today (root) and is never cut by a partition.
 *
 * **Marking.** One nftables table (`inet idd_netfaults` by default) marks every connection on the
 * output hook with the host that opened it (bit i of its ct mark, set by the packets of the original
 * direction) and the host that answers it (bit 16 + i, set by the reply direction). Marks follow the
 * uid of the socket's owner, so a connection opened before a fault is marked like one opened after:
 * the table is made before the processes start (`setup`) and the marks are always on.
 *
 * **Faults** are drop rules on the input hook, in a chain of their own (`faults`), matched on those
 * marks: a packet is dropped where it arrives, so the sender sees no error and no RST is ever sent.
 * Established connections go silent (TCP retransmits), new ones never connect (the SYN-ACK is
 * dropped), and `heal` flushes the chain: the retransmissions get through and the connections go on.
 * - `partition(A, B)`: connections between a host of A and a host of B, both directions;
 * - `cut(host, ports)`: connections between one host and the services listening on `ports`
 *   (a worker from Kafka only: the brokers' ports; from Redis only: the Redis and Sentinel ports).
 *
 * **Latency.** This kernel has no netem, so latency goes through toxiproxy: `route(host, ports)`
 * DNATs the host's new connections to `ports` to one proxy per port (the nat output hook, by uid),
 * and `latency(host, ms, jitter)` adds a latency toxic to those proxies. Because the address is
 * rewritten under the client, a Kafka client reached through the bootstrap broker's advertised
 * address is proxied too (a proxy in front of the bootstrap address alone would only slow the first
 * metadata request).
 *
 * **Clocks.** `fakeTimeEnv(offset)` is the environment that runs a process under Debian's
 * libfaketime (`LD_PRELOAD`, `FAKETIME="+2s"`): its wall clock and its monotonic clock are shifted,
 * fixed at its start. `fakeTimeFileEnv(file)` instead reads the offset from a file every second
 * (`FAKETIME_TIMESTAMP_FILE`, `FAKETIME_CACHE_DURATION=1`; Debian's libfaketime 0.9.10) and shifts
 * the wall clock only: `setFakeTime(file, "-10s")` steps a running process's clock, as NTP would.
 *
 * **One run per machine.** Marks, users and the host users' processes are the machine's, not a
 * stack's: a second run beside the first would have its connections dropped by the first's faults,
 * and its setup would kill the first's processes. `setup` therefore takes a machine-wide lock
 * (MACHINE_LOCK, held by pid) and waits while another live run holds it; `cleanup` releases it.
 *
 * **Cleanup.** `setup` first removes what an earlier run left (the table, a toxiproxy it started,
 * processes of the host users), and `cleanup` (also registered for exit, SIGINT and SIGTERM by
 * `setup`) deletes the table and stops toxiproxy. `npm run stack -- netfault cleanup` does the same.
 */
import { type ChildProcess, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { IddError } from "../src/core/errors.js";
import { ensureDebianPackage, installLog, type Progress, run, which } from "./install.js";
import { REPO_ROOT, type StackLayout } from "./paths.js";
import { portFree, runningPid, spawnDetached, stopProcess, takeFileLock } from "./proc.js";

export const TOXIPROXY_VERSION = "2.12.0";
/** Held from `setupNetfaults` to `cleanup` by one harness run on this machine at a time. */
export const MACHINE_LOCK = "/run/idd-netfaults.lock";
export const HOSTS = ["side-a", "side-b", "h1", "h2", "h3", "h4"] as const;
export type Host = (typeof HOSTS)[number];
export const hostUser = (h: Host) => `idd-${h}`;
export const DEFAULT_TABLE = "idd_netfaults";

export interface Identity {
  uid: number;
  gid: number;
}

export interface NetfaultTools {
  nft: string;
  toxiproxy: string;
  libfaketime: string;
  users: Record<Host, Identity>;
}

const toxiproxyBin = (l: StackLayout) => join(l.cacheDir, `toxiproxy-${TOXIPROXY_VERSION}`, "toxiproxy-server");

function sh(cmd: string, args: string[], input?: string): string {
  const r = spawnSync(cmd, args, { encoding: "utf8", input });
  if (r.status !== 0) throw new IddError("STACK_INSTALL_FAILED", `${cmd} ${args.join(" ")}: ${r.stderr || r.error?.message || r.status}`);
  return r.stdout;
}

function identity(user: string): Identity | undefined {
  const r = spawnSync("getent", ["passwd", user], { encoding: "utf8" });
  if (r.status !== 0) return undefined;
  const f = r.stdout.trim().split(":");
  return { uid: Number(f[2]), gid: Number(f[3]) };
}

/** The system users the hosts run as, created when missing (root only). */
function ensureUsers(): Record<Host, Identity> {
  const out = {} as Record<Host, Identity>;
  for (const h of HOSTS) {
    const user = hostUser(h);
    let id = identity(user);
    if (!id) {
      if (process.getuid?.() !== 0) throw new IddError("STACK_TOOL_MISSING", `user ${user} missing and only root can create it`);
      sh("useradd", ["--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", user]);
      id = identity(user);
      if (!id) throw new IddError("STACK_INSTALL_FAILED", `useradd ${user} did not create it`);
    }
    out[h] = id;
  }
  return out;
}

function findLibfaketime(): string | undefined {
  for (const dir of ["/usr/lib/x86_64-linux-gnu/faketime", "/usr/lib/aarch64-linux-gnu/faketime", "/usr/lib/faketime"]) {
    const p = join(dir, "libfaketime.so.1");
    if (existsSync(p)) return p;
  }
  return undefined;
}

/**
 * Installs what the faults need, first run only: Debian's nftables and faketime (apt-get), toxiproxy
 * from the Go module proxy into the stack's cache, the host users.
 */
export async function installNetfaults(l: StackLayout, progress: Progress = () => {}): Promise<NetfaultTools> {
  mkdirSync(l.cacheDir, { recursive: true });
  if (process.getuid?.() !== 0) throw new IddError("STACK_TOOL_MISSING", "network faults need root (nftables, users, uids)");
  // One after the other: two apt-get runs at once would fight over dpkg's lock.
  const nft = await ensureDebianPackage(l, "nftables", "nft", progress);
  await ensureDebianPackage(l, "faketime", "faketime", progress);
  const libfaketime = findLibfaketime();
  if (!libfaketime) throw new IddError("STACK_INSTALL_FAILED", "faketime is installed but libfaketime.so.1 was not found");
  const bin = await ensureToxiproxy(l, progress);
  openToHostUsers([REPO_ROOT, process.execPath], progress);
  return { nft, toxiproxy: bin, libfaketime, users: ensureUsers() };
}

/** toxiproxy's server from the Go module proxy into the stack's cache (first run only); its path. */
export async function ensureToxiproxy(l: StackLayout, progress: Progress = () => {}): Promise<string> {
  const bin = toxiproxyBin(l);
  if (!existsSync(bin)) {
    if (!which("go"))
      throw new IddError("STACK_TOOL_MISSING", `go not found on PATH: it builds toxiproxy ${TOXIPROXY_VERSION} on the first run`);
    progress(`building toxiproxy ${TOXIPROXY_VERSION} with go (first run only)`);
    const target = join(l.cacheDir, `toxiproxy-${TOXIPROXY_VERSION}`);
    const tmp = `${target}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    try {
      await run(
        "go install (toxiproxy)",
        "go",
        ["install", `github.com/Shopify/toxiproxy/v2/cmd/server@v${TOXIPROXY_VERSION}`],
        // @latest resolves to an old module path (v1); the version is pinned.
        { log: installLog(l, "toxiproxy"), env: { ...process.env, GOBIN: tmp, CGO_ENABLED: "0", GOFLAGS: "" } },
      );
      renameSync(join(tmp, "server"), join(tmp, "toxiproxy-server"));
      renameSync(tmp, target);
    } catch (e) {
      rmSync(tmp, { recursive: true, force: true });
      if (!existsSync(bin)) throw e; // else another test process built it first
    }
  }
  return bin;
}

/**
 * The host users run node (this one: under ~/.cache/idd when .ci/run installed the line) and the
 * checkout's files (workers, test clients): every folder above them must let others pass (o+x, not
 * list), which a home folder (/root, 0700) does not. Added where missing, and said.
 */
function openToHostUsers(paths: string[], progress: Progress): void {
  const opened: string[] = [];
  for (const path of paths)
    for (let dir = dirname(path); ; dir = dirname(dir)) {
      const mode = statSync(dir).mode;
      if ((mode & 0o001) === 0) {
        chmodSync(dir, mode | 0o001);
        opened.push(dir);
      }
      if (dirname(dir) === dir) break;
    }
  if (opened.length > 0) progress(`let the host users pass through ${opened.join(", ")} (o+x), to run node and the checkout`);
}

/** The environment that runs a process `offset` away from real time (e.g. "+2s", "-10s", "+1h"), wall and monotonic clocks. */
export function fakeTimeEnv(tools: Pick<NetfaultTools, "libfaketime">, offset: string): NodeJS.ProcessEnv {
  if (!/^[+-]\d+(\.\d+)?[smhdy]?$/.test(offset)) throw new Error(`faketime offset like "+2s" or "-10s" expected, got "${offset}"`);
  return { LD_PRELOAD: tools.libfaketime, FAKETIME: offset, FAKETIME_DONT_FAKE_MONOTONIC: "0", FAKETIME_NO_CACHE: "1" };
}

/**
 * The environment that runs a process under a clock file (`setFakeTime`): its wall clock (not its
 * monotonic clock, as NTP stepping a clock would) shifted by the offset written there, read again
 * each second, so the offset changes while the process runs.
 */
export function fakeTimeFileEnv(tools: Pick<NetfaultTools, "libfaketime">, file: string): NodeJS.ProcessEnv {
  if (!existsSync(file)) setFakeTime(file, "+0");
  return {
    LD_PRELOAD: tools.libfaketime,
    FAKETIME_TIMESTAMP_FILE: file,
    FAKETIME_CACHE_DURATION: "1",
    FAKETIME_DONT_FAKE_MONOTONIC: "1",
  };
}

/** Sets the offset of the processes running under `file` (fakeTimeFileEnv): within a second, e.g. "-10s", "+1h", "+0". */
export function setFakeTime(file: string, offset: string): void {
  if (!/^[+-]\d+(\.\d+)?[smhdy]?$/.test(offset)) throw new Error(`faketime offset like "+2s" or "-10s" expected, got "${offset}"`);
  // Written aside and renamed, so a reader never sees half a line; readable by the host users.
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, `${offset}\n`, { mode: 0o644 });
  chmodSync(tmp, 0o644);
  renameSync(tmp, file);
}

const bit = (h: Host) => 1 << HOSTS.indexOf(h);
const hex = (n: number) => `0x${(n >>> 0).toString(16).padStart(8, "0")}`;
const origMask = (hs: readonly Host[]) => hs.reduce((m, h) => m | bit(h), 0);
const replyMask = (hs: readonly Host[]) => hs.reduce((m, h) => (m | (bit(h) << 16)) >>> 0, 0);

export interface NetfaultOptions {
  layout: StackLayout;
  /** The nftables table (one per harness run; default idd_netfaults). */
  table?: string;
  /** Toxiproxy's API port (default stack base + 474, i.e. IDD_STACK_PORT_BASE + 474). */
  toxiproxyPort?: number;
  progress?: Progress;
}

interface Route {
  host: Host;
  port: number;
  proxyPort: number;
  name: string;
}

/** One run's network faults: made by `setupNetfaults`, removed by `cleanup` (or the next run's setup). */
export class Netfaults {
  readonly #routes: Route[] = [];
  #toxiproxy: ChildProcess | undefined;
  #nextProxyPort: number;
  /** Signals no one else handled when `start` ran: raised again after the cleanup, so they still end the process. */
  readonly #reraise = new Set<NodeJS.Signals>();
  #onSignal = (sig: NodeJS.Signals) => {
    this.#end();
    if (this.#reraise.has(sig)) process.kill(process.pid, sig);
  };
  #onExit = () => this.#end();

  constructor(
    readonly tools: NetfaultTools,
    readonly layout: StackLayout,
    readonly table: string,
    readonly toxiproxyPort: number,
    readonly release: () => void = () => {},
  ) {
    this.#nextProxyPort = toxiproxyPort + 1;
  }

  get dir() {
    return join(this.layout.dir, "netfaults");
  }

  identity(h: Host): Identity {
    return this.tools.users[h];
  }

  /** The host a uid runs as, if it is one of ours. */
  hostOfUid(uid: number): Host | undefined {
    return HOSTS.find((h) => this.tools.users[h].uid === uid);
  }

  nft(script: string): void {
    sh(this.tools.nft, ["-f", "-"], script);
  }

  /** The rules in force (for a report or a test). */
  rules(): string {
    return spawnSync(this.tools.nft, ["list", "table", "inet", this.table], { encoding: "utf8" }).stdout;
  }

  async start(): Promise<void> {
    this.cleanupSync(); // leftovers of a run that was killed outright
    const marks = HOSTS.flatMap((h) => {
      const uid = this.tools.users[h].uid;
      return [
        `    meta skuid ${uid} ct direction original ct mark set ct mark or ${hex(bit(h))}`,
        `    meta skuid ${uid} ct direction reply ct mark set ct mark or ${hex(bit(h) << 16)}`,
      ];
    });
    this.nft(
      [
        `table inet ${this.table} {`,
        "  chain marks {",
        "    type filter hook output priority mangle; policy accept;",
        ...marks,
        "  }",
        "  chain faults {",
        "    type filter hook input priority filter; policy accept;",
        "  }",
        "  chain routes {",
        "    type nat hook output priority -100; policy accept;",
        "  }",
        "}",
        "",
      ].join("\n"),
    );
    process.once("exit", this.#onExit);
    for (const sig of ["SIGINT", "SIGTERM"] as const) {
      if (process.listenerCount(sig) === 0) this.#reraise.add(sig);
      process.once(sig, this.#onSignal);
    }
  }

  /** Connections between any host of `a` and any host of `b` go silent; new ones never connect. */
  partition(a: readonly Host[], b: readonly Host[]): void {
    const rule = (x: readonly Host[], y: readonly Host[]) =>
      `add rule inet ${this.table} faults ct mark and ${hex(origMask(x))} != 0 ct mark and ${hex(replyMask(y))} != 0 drop comment "partition"`;
    this.nft(`${rule(a, b)}\n${rule(b, a)}\n`);
  }

  /**
   * `host`'s connections to the services on `ports` go silent (both directions); new ones never
   * connect. A link `route` sends through toxiproxy is cut between the host and its proxy (the
   * rules see the proxy's port there, the DNAT having rewritten the service's).
   */
  cut(host: Host, ports: readonly number[]): void {
    const proxied = this.#routes.filter((r) => r.host === host && ports.includes(r.port)).map((r) => r.proxyPort);
    const set = `{ ${[...ports, ...proxied].join(", ")} }`;
    const m = hex(origMask([host]));
    this.nft(
      [
        `add rule inet ${this.table} faults ct mark and ${m} != 0 tcp dport ${set} drop comment "cut ${host}"`,
        `add rule inet ${this.table} faults ct mark and ${m} != 0 tcp sport ${set} drop comment "cut ${host}"`,
        "",
      ].join("\n"),
    );
  }

  /**
   * Every connection between `host` and anyone else goes silent, root's included (the harness's
   * clients and admin run as root, which has no mark bit: they are caught as "not `host`"); its
   * connections to itself (a Kafka node to its own controller listener) go on. New ones never connect.
   */
  isolate(host: Host): void {
    const o = hex(origMask([host]));
    const r = hex(replyMask([host]));
    this.nft(
      [
        `add rule inet ${this.table} faults ct mark and ${o} != 0 ct mark and ${r} == 0 drop comment "isolate ${host}"`,
        `add rule inet ${this.table} faults ct mark and ${r} != 0 ct mark and ${o} == 0 drop comment "isolate ${host}"`,
        "",
      ].join("\n"),
    );
  }

  /** Lets the host users reach `paths` (a service's install under a 0700 home): o+x on every folder above them. */
  allow(paths: readonly string[], progress: Progress = () => {}): void {
    openToHostUsers([...paths], progress);
  }

  /** `host`'s cuts removed (a partition stays): its silent connections to those services resume. */
  uncut(host: Host): void {
    const listed = spawnSync(this.tools.nft, ["-a", "list", "chain", "inet", this.table, "faults"], { encoding: "utf8" }).stdout;
    const handles = [...listed.matchAll(new RegExp(`comment "cut ${host}" # handle (\\d+)`, "g"))].map((m) => m[1]);
    if (handles.length > 0) this.nft(handles.map((h) => `delete rule inet ${this.table} faults handle ${h}\n`).join(""));
  }

  /** Every partition and cut removed: silent connections resume (their retransmissions get through). */
  heal(): void {
    this.nft(`flush chain inet ${this.table} faults\n`);
  }

  /** Toxiproxy, started once (detached, pid file in the run's folder, killed by cleanup). */
  async #proxy(): Promise<string> {
    const api = `http://127.0.0.1:${this.toxiproxyPort}`;
    if (this.#toxiproxy) return api;
    mkdirSync(this.dir, { recursive: true });
    this.#toxiproxy = spawnDetached({
      cmd: this.tools.toxiproxy,
      args: ["-host", "127.0.0.1", "-port", String(this.toxiproxyPort)],
      cwd: this.dir,
      env: process.env,
      log: join(this.dir, "toxiproxy.log"),
      pidFile: join(this.dir, "toxiproxy.pid"),
    });
    const deadline = Date.now() + 10_000;
    while (
      !(await fetch(`${api}/version`)
        .then((r) => r.ok)
        .catch(() => false))
    ) {
      if (Date.now() > deadline)
        throw new IddError("STACK_NOT_READY", `toxiproxy not answering on ${api}; see ${join(this.dir, "toxiproxy.log")}`);
      await sleep(100);
    }
    return api;
  }

  async #api(method: string, path: string, body?: unknown): Promise<unknown> {
    const api = await this.#proxy();
    const r = await fetch(`${api}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    if (!r.ok) throw new Error(`toxiproxy ${method} ${path}: ${r.status} ${await r.text()}`);
    return r.status === 204 ? undefined : r.json();
  }

  /**
   * `host`'s new connections to `ports` go through toxiproxy (one proxy per port, DNAT by uid on the
   * nat output hook). Its connections opened before are not moved: route before starting it.
   */
  async route(host: Host, ports: readonly number[]): Promise<void> {
    for (const port of ports) {
      if (this.#routes.some((r) => r.host === host && r.port === port)) continue;
      let proxyPort = this.#nextProxyPort++;
      while (!(await portFree(proxyPort))) proxyPort = this.#nextProxyPort++;
      const name = `${host}-${port}`;
      await this.#api("POST", "/proxies", { name, listen: `127.0.0.1:${proxyPort}`, upstream: `127.0.0.1:${port}`, enabled: true });
      this.nft(
        `add rule inet ${this.table} routes meta skuid ${this.tools.users[host].uid} ip daddr 127.0.0.1 tcp dport ${port} dnat ip to 127.0.0.1:${proxyPort} comment "route ${name}"\n`,
      );
      this.#routes.push({ host, port, proxyPort, name });
    }
  }

  /**
   * Latency (ms ± jitter, round trip: half each way) on the links of `host` that `route` sends
   * through toxiproxy, both directions; `ports`, only the links to those services (default all).
   */
  async latency(host: Host, ms: number, jitterMs = 0, ports?: readonly number[]): Promise<void> {
    const routes = this.#routes.filter((r) => r.host === host && (!ports || ports.includes(r.port)));
    if (routes.length === 0)
      throw new Error(`no link of ${host}${ports ? ` to ${ports.join(", ")}` : ""} goes through toxiproxy: route() it first`);
    for (const r of routes) {
      for (const stream of ["upstream", "downstream"] as const) {
        await this.#api("POST", `/proxies/${r.name}/toxics`, {
          name: `latency-${stream}`,
          type: "latency",
          stream,
          attributes: { latency: Math.round(ms / 2), jitter: Math.round(jitterMs / 2) },
        });
      }
    }
  }

  /** Every toxic removed (the routes stay, now without delay). */
  async calm(): Promise<void> {
    for (const r of this.#routes) {
      const toxics = (await this.#api("GET", `/proxies/${r.name}/toxics`)) as { name: string }[];
      for (const t of toxics) await this.#api("DELETE", `/proxies/${r.name}/toxics/${t.name}`);
    }
  }

  /** Deletes the table, stops toxiproxy and any process still running as a host user. */
  async cleanup(): Promise<void> {
    this.#end();
    process.off("exit", this.#onExit);
    process.off("SIGINT", this.#onSignal);
    process.off("SIGTERM", this.#onSignal);
  }

  cleanupSync(): void {
    spawnSync(this.tools.nft, ["delete", "table", "inet", this.table], { stdio: "ignore" });
    const pid = runningPid(join(this.dir, "toxiproxy.pid"), this.dir);
    if (pid !== undefined) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        /* gone */
      }
    }
    rmSync(join(this.dir, "toxiproxy.pid"), { force: true });
    this.#toxiproxy = undefined;
    this.#routes.length = 0;
    killHostProcesses(this.tools.users);
  }

  /** Cleans up and lets the next run on this machine set up. */
  #end(): void {
    this.cleanupSync();
    this.release();
  }
}

/**
 * SIGKILLs every process running as one of the host users: only the harness starts processes under
 * them (they have no login), so whatever runs as one is a leftover of a run, or of this one.
 */
export function killHostProcesses(users: Record<Host, Identity>): number[] {
  const uids = new Set(Object.values(users).map((u) => u.uid));
  const killed: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const st = statSync(`/proc/${entry}`);
      if (!uids.has(st.uid)) continue;
      const status = readFileSync(`/proc/${entry}/status`, "utf8");
      const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
      if (!uids.has(uid) || /^State:\s+Z/m.test(status)) continue; // a zombie is gone already
      process.kill(Number(entry), "SIGKILL");
      killed.push(Number(entry));
    } catch {
      /* gone */
    }
  }
  // A killed process lingers a moment before it exits: wait (synchronously: exit handlers call
  // this) until each is gone or a zombie, so that what runs next finds none of them.
  const nap = new Int32Array(new SharedArrayBuffer(4));
  for (const deadline = Date.now() + 5000; killed.some((pid) => !exited(pid)) && Date.now() < deadline; ) Atomics.wait(nap, 0, 0, 20);
  return killed;
}

/** Whether process `pid` has exited (no longer in /proc, or a zombie waiting for its parent). */
function exited(pid: number): boolean {
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return true;
  }
}

/**
 * Installs (first run only), waits for any other run on this machine to end, removes what an
 * earlier run left, and makes the marking table.
 */
export async function setupNetfaults(o: NetfaultOptions): Promise<Netfaults> {
  const tools = await installNetfaults(o.layout, o.progress);
  const release = await takeFileLock(MACHINE_LOCK);
  const n = new Netfaults(tools, o.layout, o.table ?? DEFAULT_TABLE, o.toxiproxyPort ?? o.layout.ports.redis + 95, release);
  try {
    await n.start();
  } catch (e) {
    release();
    throw e;
  }
  return n;
}

/** Stops a process the harness started under a host user (process group first). */
export const stopHostProcess = (pid: number) => stopProcess(pid, 5000);
