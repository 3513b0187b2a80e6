/**
 * Debian's Chromium, headless, driven from its command line only (no DevTools client, no npm
 * dependency): `--dump-dom` prints the DOM after the page's scripts ran for a virtual-time budget,
 * `--screenshot` writes a PNG of what a person would see. Each run has a wall-clock limit and its
 * own process group, killed whole afterwards, so a browser that hangs or leaves helpers behind
 * cannot hang the test run.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface BrowserRun {
  /** How long the page's own timers may run (virtual time: waits for network fetches in flight). */
  budgetMs: number;
  /** Wall-clock limit for the whole browser run. */
  timeoutMs?: number;
  width?: number;
  height?: number;
}

async function chromium(bin: string, url: string, extra: string[], o: BrowserRun): Promise<string> {
  const profile = mkdtempSync(join(tmpdir(), "idd-chromium-"));
  const args = [
    "--headless",
    "--no-sandbox", // root in CI containers: the sandbox refuses to start
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    `--user-data-dir=${profile}`,
    `--window-size=${o.width ?? 1400},${o.height ?? 1000}`,
    `--virtual-time-budget=${o.budgetMs}`,
    ...extra,
    url,
  ];
  const child = spawn(bin, args, { detached: true, stdio: ["ignore", "pipe", "pipe"] });
  const killGroup = () => {
    try {
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    } catch {
      /* the group is gone already */
    }
  };
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const timeoutMs = o.timeoutMs ?? o.budgetMs + 30_000;
  try {
    const code = await new Promise<number | string>((resolve, reject) => {
      const timer = setTimeout(() => {
        killGroup();
        reject(new Error(`chromium did not finish within ${timeoutMs} ms (killed); its stderr ends:\n${stderr}`));
      }, timeoutMs);
      child.once("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
      child.once("exit", (c, sig) => {
        clearTimeout(timer);
        resolve(c ?? sig ?? "?");
      });
    });
    if (code !== 0) throw new Error(`chromium exited with ${code}; its stderr ends:\n${stderr}`);
    return stdout;
  } finally {
    killGroup(); // helpers (zygote, GPU, crash handler) that outlived the browser
    rmSync(profile, { recursive: true, force: true });
  }
}

/** The page's DOM as serialized after its scripts ran for `budgetMs` of virtual time. */
export const dumpDom = (bin: string, url: string, o: BrowserRun) => chromium(bin, url, ["--dump-dom"], o);

/** A PNG of the page after its scripts ran for `budgetMs` of virtual time. */
export async function screenshot(bin: string, url: string, path: string, o: BrowserRun): Promise<void> {
  await chromium(bin, url, [`--screenshot=${path}`], o);
}

/** What a person reads in an element's markup: tags dropped, entities decoded, blanks collapsed. */
export function visibleText(html: string): string {
  return html
    .replace(/<(script|style)[\s\S]*?<\/\1>/g, " ")
    .replace(/<[^>]+>/g, " ")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&nbsp;/g, " ")
    .replace(/&amp;/g, "&")
    .replace(/\s+/g, " ")
    .trim();
}
