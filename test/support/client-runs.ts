/**
 * Client processes that are not idd's own (the examples' clients, outside test clients), run to
 * their end, each printing one line per number: `sequence TAB number TAB sendNanos TAB replyNanos`
 * (CLOCK_MONOTONIC, comparable across processes on one machine), so their histories merge and
 * test/support/history.ts checks them together.
 */
import { spawn } from "node:child_process";
import type { Issued } from "./history.js";

export interface ClientRun {
  history: Issued[];
  status: number | null;
  stderr: string;
}

/** Runs one example client to its end; every stdout line is `sequence TAB number TAB sendNanos TAB replyNanos`. */
export function runClient(cmd: string, args: string[]): Promise<ClientRun> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => p.kill("SIGKILL"), 120_000);
    p.on("error", reject);
    p.on("close", (status) => {
      clearTimeout(timer);
      const history = stdout
        .split("\n")
        .filter(Boolean)
        .map((line): Issued => {
          const [sequence, n, sent, received] = line.split("\t") as [string, string, string, string];
          const number = BigInt(n);
          return {
            sequence,
            period: null,
            ranges: [{ first: number, last: number }],
            sentAt: Number(sent) / 1e6,
            receivedAt: Number(received) / 1e6,
          };
        });
      resolve({ history, status, stderr });
    });
  });
}
