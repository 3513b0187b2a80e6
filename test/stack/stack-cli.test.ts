/**
 * The stack CLI as a user meets it: bad set-ups fail with one clear line each, and `up`/`down`
 * start and stop exactly the stack's own processes. Each test uses its own folder and port range,
 * apart from the stack the test run itself uses.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, test } from "vitest";
import { ALL_SERVICE_NAMES, REPO_ROOT } from "../../stack/paths.js";
import { isAlive } from "../../stack/proc.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) {
    stackCli(["down"], { IDD_STACK_DIR: join(d, "stack") });
    rmSync(d, { recursive: true, force: true });
  }
});

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), "idd-stack-test-"));
  dirs.push(d);
  return d;
}

function stackCli(args: string[], env: NodeJS.ProcessEnv) {
  const r = spawnSync(process.execPath, ["--import", "tsx", join(REPO_ROOT, "stack/cli.ts"), ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    encoding: "utf8",
    timeout: 120_000,
  });
  return { status: r.status, stdout: r.stdout, lines: r.stderr.split("\n").filter((l) => l.startsWith("stack:")) };
}

/** Pids of processes whose working directory lies inside `dir`: what the stack would have started there. */
function processesIn(dir: string): number[] {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readlinkSync(`/proc/${p}/cwd`).startsWith(dir);
      } catch {
        return false;
      }
    })
    .map(Number);
}

test("missing Java, Maven, openssl, Go and redis-server are each reported on one line, and nothing is started", () => {
  const d = tmp();
  const r = stackCli(["up"], {
    PATH: join(d, "empty-bin"),
    JAVA_HOME: "",
    IDD_STACK_DIR: join(d, "stack"),
    IDD_CACHE_DIR: join(d, "cache"),
    IDD_STACK_PORT_BASE: "30000",
  });
  expect(r.status).toBe(2);
  expect(r.lines).toHaveLength(5);
  expect(r.lines[0]).toMatch(/^stack: STACK_TOOL_MISSING: java not found/);
  expect(r.lines[1]).toMatch(/^stack: STACK_TOOL_MISSING: mvn \(Apache Maven\) not found/);
  expect(r.lines[2]).toMatch(/^stack: STACK_TOOL_MISSING: openssl not found/);
  expect(r.lines[3]).toMatch(/^stack: STACK_TOOL_MISSING: go not found/);
  expect(r.lines[4]).toMatch(/^stack: STACK_TOOL_MISSING: redis-server not found/);
  expect(existsSync(join(d, "stack", "run"))).toBe(false);
  expect(existsSync(join(d, "cache"))).toBe(false);
});

test("a port taken by someone else is reported on one line naming port and service", async () => {
  const d = tmp();
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(30379, "127.0.0.1", resolve));
  try {
    const r = stackCli(["up", "redis"], { IDD_STACK_DIR: join(d, "stack"), IDD_STACK_PORT_BASE: "30000" });
    expect(r.status).toBe(2);
    expect(r.lines).toEqual([
      "stack: STACK_PORT_IN_USE: port 30379 (redis) on 127.0.0.1 is already in use by a process the stack did not start; free it or set IDD_STACK_PORT_BASE",
    ]);
    expect(processesIn(d)).toEqual([]);
  } finally {
    server.close();
  }
});

test("a service not ready in time is reported with its log's path, and what was started is stopped", () => {
  const d = tmp();
  const r = stackCli(["up", "redis"], { IDD_STACK_DIR: join(d, "stack"), IDD_STACK_PORT_BASE: "30100", IDD_STACK_READY_TIMEOUT_S: "0" });
  expect(r.status).toBe(2);
  const log = join(d, "stack", "logs", "redis.log");
  expect(r.lines.filter((l) => l.includes("STACK_"))).toEqual([`stack: STACK_NOT_READY: redis not ready after 0s; see ${log}`]);
  expect(existsSync(log)).toBe(true);
  expect(processesIn(d)).toEqual([]);
});

test("up is idempotent, writes the env file, and down stops exactly what up started", () => {
  const d = tmp();
  const env = { IDD_STACK_DIR: join(d, "stack"), IDD_STACK_PORT_BASE: "30200" };
  const first = stackCli(["up", "redis"], env);
  expect(first.status).toBe(0);
  expect(first.stdout).toContain("REDIS_URL=redis://127.0.0.1:30579\n");
  expect(readFileSync(join(d, "stack", "env"), "utf8")).toContain("REDIS_URL=redis://127.0.0.1:30579\n");
  const pid = Number(readFileSync(join(d, "stack", "run", "redis.pid"), "utf8"));
  expect(processesIn(d)).toEqual([pid]);

  const again = stackCli(["up", "redis"], env);
  expect(again.status).toBe(0);
  expect(again.lines.at(-1)).toMatch(/all were running/);
  expect(Number(readFileSync(join(d, "stack", "run", "redis.pid"), "utf8"))).toBe(pid);

  const status = stackCli(["status"], env);
  expect(status.stdout).toMatch(new RegExp(`^redis +ready +127\\.0\\.0\\.1:30579 +pid ${pid}`, "m"));
  expect(status.stdout).toMatch(/^kafka +stopped/m);

  const down = stackCli(["down"], env);
  expect(down.lines.at(-1)).toBe("stack: down (redis)");
  expect(isAlive(pid)).toBe(false);
  expect(processesIn(d)).toEqual([]);
  expect(existsSync(join(d, "stack", "env"))).toBe(false);
  expect(stackCli(["down"], env).lines.at(-1)).toBe("stack: nothing was running");
});

test("an unknown service name, profile or Kafka line is refused", () => {
  const dir = join(tmp(), "stack");
  const r = stackCli(["up", "zookeeper"], { IDD_STACK_DIR: dir });
  expect(r.status).toBe(2);
  expect(r.lines).toEqual([`stack: unknown service "zookeeper" (known: ${ALL_SERVICE_NAMES.join(", ")})`]);
  expect(ALL_SERVICE_NAMES).toContain("sentinel-1");
  const p = stackCli(["up", "--profile", "huge"], { IDD_STACK_DIR: dir });
  expect(p.status).toBe(2);
  expect(p.lines).toEqual(['stack: unknown profile "huge" (known: default, cluster)']);
  const k = stackCli(["up", "--kafka", "2.8"], { IDD_STACK_DIR: dir });
  expect(k.status).toBe(2);
  expect(k.lines).toEqual(['stack: IDD_STACK_KAFKA must be one of 4.4, 3.9 (or 4.4.0, 3.9.2), got "2.8"']);
});
