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
 */
import { homePartition } from "../../../src/protocol/home-partition.js";
import { fakeTimeEnv, type Host, type Netfaults } from "../../../stack/netfaults.js";
import { sleep, withTimeout } from "../../support/wait.js";
import type { WorkerPool } from "../pool.js";
import type { PhaseState } from "../records.js";
import { deadlineless, localDay, offsetMs } from "./clock-skew.js";
import { msg } from "./link-faults.js";
import { loneId } from "./lone-worker.js";
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
  p.injectAt = Date.now();
  try {
    for (const [i, offset] of ctx.offsets.entries()) {
      const id = `${loneId(
        pool.live().map((w) => w.id),
        home,
      )}-${i + 1}`;
      const w = pool.start({ ...nf.identity(ctx.host), host: ctx.host }, { id, env: fakeTimeEnv(nf.tools, offset) });
      await pool.firstAssignment([w], `${w.id}'s first assignment`);
      const startedAt = Date.now();
      const owns = (await pool.groupView())?.members.get(w.id) ?? [];
      const crossed = ctx.zones.filter((z) => localDay(startedAt, z) !== localDay(startedAt + offsetMs(offset), z));
      p.notes.push(
        `+${((startedAt - p.injectAt) / 1000).toFixed(1)} s: ${w.id} started with its clock ${offset} owns [${owns.join(",")}]${owns.includes(home) ? ` (the snowflake's home ${home})` : ` (NOT the snowflake's home ${home})`}${crossed.length > 0 ? `, another day than the others in ${crossed.join(", ")}` : ""}`,
      );
      if (!owns.includes(home)) p.failures.push(`${w.id} (clock ${offset}) does not own the snowflake's home partition: it tests nothing`);
      ctx.log(`  ${p.notes.at(-1)}`);
      const from = w.wp.log.length;
      await sleep(ctx.ms);
      w.expectExit = true;
      w.wp.proc.kill("SIGTERM");
      await withTimeout(w.wp.exited, 20_000, `${w.id} exit`).catch(() => w.wp.proc.kill("SIGKILL"));
      const clockLines = w.wp.log.slice(from).filter((l) => /CLOCK|clock|DEADLINE/.test(l));
      p.notes.push(
        `${w.id} stopped after ${((Date.now() - startedAt) / 1000).toFixed(1)} s: ${clockLines.length} log lines about clocks or deadlines${clockLines[0] ? `, first: ${msg(clockLines[0])}` : ""}`,
      );
      ctx.log(`  ${p.notes.at(-1)}`);
    }
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
