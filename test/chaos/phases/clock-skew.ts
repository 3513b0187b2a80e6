/**
 * `clock-skew` (issue #28, the network profile): the lone worker's wall clock (phases/lone-worker.ts,
 * which owns the snowflake sequence's home partition) stepped while it runs, as NTP would step it —
 * each offset of the profile in turn (2 s slow, 10 s back, 1 h ahead), held a while, then real time
 * again. Its monotonic clock is left alone. Snowflake ids must stay unique and ordered across the
 * steps and across owners (G1, G2), and the sequence must answer again after the heal. The notes say
 * what the worker's log said of its clock (CLOCK_BACKWARDS, …) and, per daily sequence, whether the
 * step moved the worker past a midnight the others had not reached.
 */
import { setFakeTime } from "../../../stack/netfaults.js";
import { sleep } from "../../support/wait.js";
import type { LinkFaultSettings } from "../profiles.js";
import type { PhaseState } from "../records.js";
import { msg } from "./link-faults.js";
import type { LoneWorker } from "./lone-worker.js";

export interface ClockSkewContext {
  lone: LoneWorker;
  settings: LinkFaultSettings["clock"];
  /** The daily sequences' time zones. */
  zones: string[];
  log: (line: string) => void;
}

const SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
const offsetMs = (o: string) => Number.parseFloat(o) * 1000 * (SECONDS[o.at(-1) ?? "s"] ?? 1);
const localDay = (ms: number, zone: string) => new Date(ms).toLocaleDateString("sv-SE", { timeZone: zone });

export async function clockSkew(p: PhaseState, ctx: ClockSkewContext): Promise<void> {
  const { lone } = ctx;
  const w = await lone.get();
  const owns = await lone.owns();
  p.notes.push(owns.line);
  if (!owns.snowflakeHome)
    p.failures.push(`${w.id} does not own the snowflake sequence's home partition: its clock steps miss snowflake ids`);
  const from = w.wp.log.length;
  p.injectAt = Date.now();
  for (const offset of ctx.settings.offsets) {
    setFakeTime(lone.clockFile, offset);
    const now = Date.now();
    const crossed = ctx.zones.filter((z) => localDay(now, z) !== localDay(now + offsetMs(offset), z));
    p.notes.push(
      `+${((now - p.injectAt) / 1000).toFixed(1)} s: ${w.id}'s clock ${offset}${crossed.length > 0 ? ` (another day than the others in ${crossed.join(", ")})` : ""}`,
    );
    ctx.log(`  ${p.notes.at(-1)}`);
    await sleep(ctx.settings.ms);
  }
  setFakeTime(lone.clockFile, "+0");
  // libfaketime reads the file again within a second.
  await sleep(1200);
  p.healedAt = Date.now();
  const clockLines = w.wp.log.slice(from).filter((l) => /CLOCK|clock/.test(l));
  p.notes.push(
    `${w.id}'s clock real again: ${clockLines.length} log lines about its clock${clockLines[0] ? `, first: ${msg(clockLines[0])}` : ""}`,
  );
  ctx.log(`  ${p.notes.at(-1)}`);
}
