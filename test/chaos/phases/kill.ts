/** `kill`: SIGKILL a partition owner, then start a replacement. */
import type { WorkerPool } from "../pool.js";
import type { PhaseState } from "../records.js";

export interface KillContext {
  pool: Pick<WorkerPool, "pickVictim" | "describe" | "kill" | "start">;
}

export async function kill(p: PhaseState, { pool }: KillContext): Promise<void> {
  const pick = await pool.pickVictim();
  if (!pick) throw new Error("no live worker to kill");
  p.notes.push(`SIGKILL ${pool.describe(pick)}`);
  await pool.kill(pick.w);
  p.healedAt = Date.now();
  const n = pool.start();
  p.notes.push(`replacement ${n.id}`);
}
