/** `pause`: SIGSTOP a partition owner for longer than the session timeout, then SIGCONT. */
import { sleep } from "../../support/wait.js";
import type { WorkerPool } from "../pool.js";
import type { PhaseState } from "../records.js";

export interface PauseContext {
  pool: Pick<WorkerPool, "pickVictim" | "describe">;
  pauseMs: number;
}

export async function pause(p: PhaseState, { pool, pauseMs }: PauseContext): Promise<void> {
  const pick = await pool.pickVictim();
  if (!pick) throw new Error("no live worker to pause");
  const v = pick.w;
  p.notes.push(`SIGSTOP ${pool.describe(pick)} for ${pauseMs} ms`);
  v.paused = true;
  v.wp.proc.kill("SIGSTOP");
  await sleep(pauseMs);
  v.wp.proc.kill("SIGCONT");
  v.paused = false;
  p.healedAt = Date.now();
  p.notes.push(`SIGCONT ${v.id}`);
}
