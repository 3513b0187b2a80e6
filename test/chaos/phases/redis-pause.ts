/** `redis-pause`: SIGSTOP redis-server with its data; commands hang rather than fail. */
import { sleep } from "../../support/wait.js";
import type { StackControl } from "../private-stack.js";
import type { PhaseState } from "../records.js";

export interface RedisPauseContext {
  stack: Pick<StackControl, "redisPid">;
  redisPauseMs: number;
}

export async function redisPause(p: PhaseState, { stack, redisPauseMs }: RedisPauseContext): Promise<void> {
  const pid = stack.redisPid();
  p.notes.push(`SIGSTOP redis-server (pid ${pid}) for ${redisPauseMs} ms`);
  process.kill(pid, "SIGSTOP");
  try {
    await sleep(redisPauseMs);
  } finally {
    process.kill(pid, "SIGCONT");
  }
  p.healedAt = Date.now();
  p.notes.push("SIGCONT redis-server");
}
