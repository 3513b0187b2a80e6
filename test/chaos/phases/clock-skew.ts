/**
 * `clock-skew` (issue #28, the network profile): the lone worker's wall clock (phases/lone-worker.ts,
 * which owns the snowflake sequence's home partition) stepped while it runs, as NTP would step it —
 * each offset of the profile in turn (2 s slow, 10 s back, 1 h ahead), held a while, then real time
 * again. Its monotonic clock is left alone. Snowflake ids must stay unique and ordered across the
 * steps and across owners (G1, G2), and the sequence must answer again after the heal. The notes say
 * what the worker's log said of its clock (CLOCK_BACKWARDS, …) and, per daily sequence, whether the
 * step moved the worker past a midnight the others had not reached.
 *
 * IdClient's requests carry a deadline, which a worker an hour ahead finds long past
 * (DEADLINE_EXCEEDED: it issues nothing under that clock). Clients that send none (the wire
 * contract makes `deadline` optional) are answered whatever the worker's clock says, so throughout the
 * steps a raw producer also sends deadline-less JSON requests for the snowflake sequence and the
 * daily sequence homed with it (sequences.ts: MidnightSequence); their replies join the history.
 */
import { performance } from "node:perf_hooks";
import { setFakeTime } from "../../../stack/netfaults.js";
import { goodRequest } from "../../support/hostile-requests.js";
import { poll, sleep } from "../../support/wait.js";
import type { LinkFaultSettings } from "../profiles.js";
import type { PhaseState } from "../records.js";
import { msg } from "./link-faults.js";
import type { LoneWorker } from "./lone-worker.js";
import { type Placed, type RawPhaseContext, RawTraffic, recordReplies, safeReply } from "./raw-traffic.js";

export interface ClockSkewContext {
  lone: LoneWorker;
  settings: LinkFaultSettings["clock"];
  /** The daily sequences' time zones. */
  zones: string[];
  /** The deadline-less requests: a raw producer and its reply topic, and the sequences asked. */
  raw: RawPhaseContext;
  asked: string[];
  log: (line: string) => void;
}

const SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
export const offsetMs = (o: string) => Number.parseFloat(o) * 1000 * (SECONDS[o.at(-1) ?? "s"] ?? 1);
export const localDay = (ms: number, zone: string) => new Date(ms).toLocaleDateString("sv-SE", { timeZone: zone });

export async function clockSkew(p: PhaseState, ctx: ClockSkewContext): Promise<void> {
  const { lone } = ctx;
  const w = await lone.get();
  const owns = await lone.owns();
  p.notes.push(owns.line);
  if (!owns.snowflakeHome)
    p.failures.push(`${w.id} does not own the snowflake sequence's home partition: its clock steps miss snowflake ids`);
  const from = w.wp.log.length;
  const traffic = await RawTraffic.open(ctx.raw.brokers, "chaos-clock", [ctx.raw.replyTopic]);
  let streaming = true;
  const stream = deadlineless(ctx, traffic, () => streaming);
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
  streaming = false;
  try {
    p.notes.push(await stream);
  } finally {
    await traffic.close();
  }
  const clockLines = w.wp.log.slice(from).filter((l) => /CLOCK|clock/.test(l));
  p.notes.push(
    `${w.id}'s clock real again: ${clockLines.length} log lines about its clock${clockLines[0] ? `, first: ${msg(clockLines[0])}` : ""}`,
  );
  ctx.log(`  ${p.notes.at(-1)}`);
}

/** Waves of deadline-less requests, one per asked sequence, every 250 ms while `on()`; then their replies recorded. */
export async function deadlineless(ctx: Pick<ClockSkewContext, "raw" | "asked">, traffic: RawTraffic, on: () => boolean): Promise<string> {
  const { raw } = ctx;
  const target = { replyTopic: raw.replyTopic, replyPartitions: raw.replyPartitions };
  const placed: Placed[] = [];
  for (let wave = 0; on(); wave++) {
    const reqs = ctx.asked.map((s) => goodRequest(s, target, 1, wave));
    placed.push(...(await traffic.send(raw.requestTopic, raw.requestPartitions, reqs)));
    await sleep(250);
  }
  await poll(() => placed.every((p) => traffic.seen.has(p.req.correlation)), { timeoutMs: 30_000, everyMs: 100 });
  const codes: Record<string, number> = {};
  let ok = 0;
  for (const p of placed) {
    const seen = traffic.seen.get(p.req.correlation) ?? [];
    if (seen.length === 0) {
      raw.record({ sequence: p.req.sequence, count: 1, sentAt: p.sentAt, receivedAt: performance.now(), code: "NO_REPLY" });
      codes.NO_REPLY = (codes.NO_REPLY ?? 0) + 1;
      continue;
    }
    const replies = seen.map((x) => ({ x, reply: safeReply(x.value) }));
    recordReplies(raw, p, replies, true);
    const first = replies[0]?.reply;
    if (first?.status === "OK") ok++;
    else {
      const code = first?.error?.code ?? "UNPARSABLE";
      codes[code] = (codes[code] ?? 0) + 1;
    }
  }
  const failed = Object.entries(codes).map(([c, n]) => `${c} ${n}`);
  return `deadline-less requests for ${ctx.asked.join(", ")}: ${placed.length} sent, ${ok} with numbers${failed.length > 0 ? `, ${failed.join(", ")}` : ""}`;
}
