import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "ioredis";
import type { ServiceSettings } from "../../src/config/services.js";
import { dataDir, layoutFromEnv, pidFile, REPO_ROOT, type ServiceName, type StackLayout } from "../../stack/paths.js";
import { down, up } from "../../stack/stack.js";

const _REPLAY_TIMEOUT_MS = 120_000;

/** The private stack's layout: its own folder and ports, never the shared stack's. */
export function chaosLayout(opts: { stackDir?: string; portBase?: number } = {}): StackLayout {
  return layoutFromEnv({
    ...process.env,
    IDD_STACK_DIR: opts.stackDir ?? process.env.IDD_CHAOS_STACK_DIR ?? join(REPO_ROOT, ".stack-chaos"),
    IDD_STACK_PORT_BASE: String(opts.portBase ?? process.env.IDD_CHAOS_PORT_BASE ?? 31000),
  });
}

/** One chaos run per stack folder: a second one would stop the first one's services. */
export function takeLock(stackDir: string): string {
  mkdirSync(stackDir, { recursive: true });
  const file = join(stackDir, "chaos.lock");
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: "wx" });
      return file;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) throw e;
      const pid = Number(readFileSync(file, "utf8").trim());
      let running = false;
      try {
        process.kill(pid, 0);
        running = pid !== process.pid;
      } catch {
        running = false;
      }
      if (running) throw new Error(`another chaos run (pid ${pid}) is using ${stackDir}; wait for it or stop it`);
      rmSync(file, { force: true }); // left by a run that is gone
    }
  }
}

/** The running private stack, as the phases act on it. */
export class StackControl {
  constructor(
    readonly layout: StackLayout,
    readonly settings: ServiceSettings,
    private readonly progress: (line: string) => void,
  ) {}

  /** Stops or starts one service; how long it took goes to `notes`. */
  async service(s: ServiceName, what: "up" | "down", notes: string[]): Promise<void> {
    const t = Date.now();
    if (what === "down") await down({ layout: this.layout, services: [s], progress: this.progress });
    else await up({ layout: this.layout, services: [s], progress: this.progress });
    notes.push(`${s} ${what} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  }

  redis(): Redis {
    return new Redis(this.settings.redisUrl, { maxRetriesPerRequest: 1, lazyConnect: false });
  }

  redisPid(): number {
    return Number(readFileSync(pidFile(this.layout, "redis"), "utf8").trim());
  }

  /** Where a Redis dump would be; the stack runs Redis with --save "" --appendonly no, so none should be. */
  redisDumpFile(): string {
    return join(dataDir(this.layout, "redis"), "dump.rdb");
  }

  async flushall(): Promise<void> {
    const r = this.redis();
    try {
      await r.flushall();
    } finally {
      r.disconnect();
    }
  }

  /** What Redis holds (right after a loss: nothing workers wrote before). */
  async redisKeys(): Promise<string> {
    const r = this.redis();
    try {
      const all = (await r.keys("*")).sort();
      // Recorded answers come back at once with the traffic (expected): counted, not listed.
      const isAnswer = (k: string) => k.includes("}:answer:");
      const answers = all.filter(isAnswer).length;
      const keys = all.filter((k) => !isAnswer(k));
      const shown = await Promise.all(
        keys.slice(0, 12).map(async (k) => {
          const type = await r.type(k);
          if (type === "hash") return `${k} ${JSON.stringify(await r.hgetall(k))}`;
          if (type === "string") return `${k}=${await r.get(k)}`;
          return `${k} (${type})`;
        }),
      );
      return `${answers} recorded answers, ${keys.length} other keys${shown.length > 0 ? ` [${shown.join(", ")}${keys.length > shown.length ? ", …" : ""}]` : ""}`;
    } catch (e) {
      return `unreadable (${(e as Error).message})`;
    } finally {
      r.disconnect();
    }
  }
}
