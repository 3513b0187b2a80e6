/** `scale`: two workers more, then SIGTERM to two of the others; each must leave with exit 0. */
import { sleep, withTimeout } from "../../support/wait.js";
import { showGroup, type WorkerPool } from "../pool.js";
import type { PhaseState } from "../records.js";

export interface ScaleContext {
  pool: Pick<WorkerPool, "start" | "live" | "groupView" | "unexpectedExits">;
  /** How long the grown pool runs before the scale-in: the calm between phases, and 2 s more. */
  calmMs: number;
}

export async function scale(p: PhaseState, { pool, calmMs }: ScaleContext): Promise<void> {
  const added = [pool.start(), pool.start()];
  p.notes.push(`started ${added.map((w) => w.id).join(", ")}`);
  await withTimeout(Promise.all(added.map((w) => w.wp.assigned)), 60_000, "the new workers' first assignment").catch((e: Error) =>
    p.notes.push(e.message),
  );
  await sleep(calmMs + 2000);
  const leaving = pool
    .live()
    .filter((w) => !added.includes(w))
    .slice(0, 2);
  for (const w of leaving) w.expectExit = true;
  p.notes.push(`group before scale-in ${showGroup(await pool.groupView())}; SIGTERM ${leaving.map((w) => w.id).join(", ")}`);
  for (const w of leaving) w.wp.proc.kill("SIGTERM");
  const codes = await Promise.all(
    leaving.map((w) => withTimeout(w.wp.exited, 30_000, `${w.id} leaving on SIGTERM`).catch((e: Error) => e.message)),
  );
  for (const [i, w] of leaving.entries()) {
    const c = codes[i];
    if (c !== 0) {
      p.notes.push(`${w.id} did not exit 0 on SIGTERM: ${c}`);
      pool.unexpectedExits.push(`${w.id} did not exit 0 on SIGTERM (${c}) during ${p.name}`);
    }
  }
  p.healedAt = Date.now();
}
