/** `idd …` as a real process (the CLI from source, through tsx), as an operator runs it. */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { REPO_ROOT } from "../../stack/paths.js";

export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `idd <args>` with this process's environment and `env` on top; resolves when it exits.
 * `entry`: another file that runs the CLI (test/support/max-rss.ts).
 */
export function runIdd(args: string[], env: NodeJS.ProcessEnv = {}, entry = "src/cli/main.ts"): Promise<CliRun> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ["--import", "tsx", join(REPO_ROOT, entry), ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
    });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    p.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}
