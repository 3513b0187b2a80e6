/**
 * `clock-start` (issue #28, the network profile): a worker started with a wrong clock, as a host
 * whose NTP had not synced yet — under libfaketime from its start (`fakeTimeEnv`: wall and
 * monotonic clocks shifted by a fixed offset, never stepped while it runs), one offset after the
 * other (10 s behind, 1 h ahead). Each is a worker of its own (host `idd-h1`), its id picked so
 * that kafkajs's round-robin assignor hands it the snowflake sequence's home partition (which the
 * midnight daily sequence shares); it serves a while, then is stopped (SIGTERM) and its partitions
 * go back to the others, who issue on the right clock after it. Snowflake ids and daily numbers
 * must stay unique and ordered across those owners (G1, G2). As in clock-skew.ts, a raw producer
 * sends deadline-less requests for both sequences throughout (a worker an hour ahead refuses
 * IdClient's, which carry a deadline).
 *
 * A wrong-clock worker also leads the gapless sweep (it owns request partition 0, src/worker/steps.ts),
 * so that the sweep's judgement on MongoDB's time, not its own, is what the gapless checks see: when
 * the one that gets the snowflake's home cannot also get partition 0 (the home is not 0 mod the
 * group's size), a second worker with the same clock starts beside it, its id sorting first (index
 * 0: partition 0). The raw producer also takes gapless numbers it never settles, so some expire
 * while a wrong-clock worker sweeps (the clients' confirm loops would see one voided early). The
 * notes say who led and how many numbers its sweep voided as expired; a phase where no wrong-clock
 * worker owned partition 0 fails.
 */
import { homePartition } from "../../../src/protocol/home-partition.js";
import { fakeTimeEnv, type Host, type Netfaults } from "../../../stack/netfaults.js";
import { sleep, withTimeout } from "../../support/wait.js";
import { type GroupView, type PoolWorker, showGroup, type WorkerPool } from "../pool.js";
import type { PhaseState } from "../records.js";
import { deadlineless, localDay, offsetMs } from "./clock-skew.js";
import { msg } from "./link-faults.js";
import { placedIds } from "./lone-worker.js";
import { type RawPhaseContext, RawTraffic } from "./raw-traffic.js";

export interface ClockStartContext {
  nf: Netfaults;
  pool: WorkerPool;
  host: Host;
  /** Each worker's fixed offset (e.g. "-10s", "+1h"), and how long it serves. */
  offsets: string[];
  ms: number;
  snowflake: string;
  partitions: number;
  zones: string[];
  raw: RawPhaseContext;
  asked: string[];
  log: (line: string) => void;
}

export async function clockStart(p: PhaseState, ctx: ClockStartContext): Promise<void> {
  const { nf, pool } = ctx;
  const home = homePartition(ctx.snowflake, ctx.partitions);
  const traffic = await RawTraffic.open(ctx.raw.brokers, "chaos-clock-start", [ctx.raw.replyTopic]);
  let streaming = true;
  const stream = deadlineless(ctx, traffic, () => streaming);
  let swept = false;
  p.injectAt = Date.now();
  try {
    for (const [i, offset] of ctx.offsets.entries()) {
      const live = pool.live().map((w) => w.id);
      // Index 0 owns partition 0 (the sweep); one there owns the home too when it is 0 mod the group's size.
      const at = home % (live.length + 1) === 0 ? [0] : [0, home % (live.length + 2) || 1];
      const ws = placedIds(live, at, `-${i + 1}`).map((id) =>
        pool.start({ ...nf.identity(ctx.host), host: ctx.host }, { id, env: fakeTimeEnv(nf.tools, offset) }),
      );
      await pool.firstAssignment(ws, `${ws.map((w) => w.id).join(" and ")}'s first assignment`);
      const { view, stable } = await settled(pool, ws);
      const startedAt = Date.now();
      const ownsOf = (w: PoolWorker) => view?.members.get(w.id) ?? [];
      const crossed = ctx.zones.filter((z) => localDay(startedAt, z) !== localDay(startedAt + offsetMs(offset), z));
      const role = (ps: number[]) =>
        [ps.includes(home) && `the snowflake's home ${home}`, ps.includes(0) && "0: leads the gapless sweep"].filter(Boolean).join(", ");
      p.notes.push(
        `+${((startedAt - p.injectAt) / 1000).toFixed(1)} s: ${ws
          .map(
            (w) =>
              `${w.id} started with its clock ${offset} owns [${ownsOf(w).join(",")}]${role(ownsOf(w)) ? ` (${role(ownsOf(w))})` : ""}`,
          )
          .join(
            "; ",
          )}${crossed.length > 0 ? `, another day than the others in ${crossed.join(", ")}` : ""}${stable ? "" : ` (group not stable after 20 s: ${showGroup(view)})`}`,
      );
      if (!ws.some((w) => ownsOf(w).includes(home)))
        p.failures.push(
          `no worker with the clock ${offset} owns the snowflake's home partition ${home}: it tests nothing; group ${showGroup(view)}`,
        );
      const sweeper = ws.find((w) => ownsOf(w).includes(0));
      if (sweeper) swept = true;
      ctx.log(`  ${p.notes.at(-1)}`);
      const from = new Map(ws.map((w) => [w, w.wp.log.length]));
      await sleep(ctx.ms);
      for (const w of ws) {
        w.expectExit = true;
        w.wp.proc.kill("SIGTERM");
      }
      await Promise.all(ws.map((w) => withTimeout(w.wp.exited, 20_000, `${w.id} exit`).catch(() => w.wp.proc.kill("SIGKILL"))));
      for (const w of ws) {
        const lines = w.wp.log.slice(from.get(w));
        const clockLines = lines.filter((l) => /CLOCK|clock|DEADLINE/.test(l));
        const sweep = w === sweeper ? `; its sweep voided ${expiredBy(lines)} numbers as expired` : "";
        p.notes.push(
          `${w.id} stopped after ${((Date.now() - startedAt) / 1000).toFixed(1)} s: ${clockLines.length} log lines about clocks or deadlines${clockLines[0] ? `, first: ${msg(clockLines[0])}` : ""}${sweep}`,
        );
        ctx.log(`  ${p.notes.at(-1)}`);
      }
    }
    if (!swept) p.failures.push("no worker with a wrong clock owned request partition 0: the gapless sweep never ran on a wrong clock");
  } finally {
    p.healedAt = Date.now();
    streaming = false;
    try {
      p.notes.push(await stream);
    } finally {
      await traffic.close();
    }
  }
}

/** The group once it is stable with every one of `ws` in it (up to 20 s; the last view after that). */
async function settled(pool: WorkerPool, ws: PoolWorker[]): Promise<{ view: GroupView | undefined; stable: boolean }> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const view = await pool.groupView();
    if (view?.state === "Stable" && ws.every((w) => view.members.has(w.id))) return { view, stable: true };
    if (Date.now() >= deadline) return { view, stable: false };
    await sleep(500);
  }
}

/** How many numbers the sweep's log lines ("… voided, reason expired", ranges like `12-15`) name. */
function expiredBy(lines: string[]): number {
  let n = 0;
  for (const l of lines) {
    if (!l.includes("voided, reason expired")) continue;
    try {
      for (const r of (JSON.parse(l) as { voided?: string[] }).voided ?? []) {
        const [a, b = a] = r.split("-").map(Number);
        n += (b as number) - (a as number) + 1;
      }
    } catch {
      // not a JSON line
    }
  }
  return n;
}
