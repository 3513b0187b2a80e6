/**
 * One worker's links (issue #28, the network profile), on the lone worker of phases/lone-worker.ts
 * while the others keep every link:
 * - `redis-cut`, `mongodb-cut`, `kafka-cut`: its established connections to Redis and the Sentinels,
 *   to MongoDB, to the broker go silent (packets dropped where they arrive: no RST, TCP retransmits)
 *   and new ones never connect, for `cutMs`; then healed, and the silent connections go on. Cut from
 *   Redis it answers from the blocks in memory, then `UNAVAILABLE` (§5.5); from MongoDB, from blocks
 *   and headroom (§5.7); from Kafka, it is a zombie whose partitions move once its session expires
 *   (§5.17). Neither wait may cost it its group membership (checked after the phase).
 * - `redis-latency`, `kafka-latency`: 200 ± 100 ms round trip on its Redis links, then on its Kafka
 *   link (toxiproxy), for `ms`; then removed.
 */
import type { Netfaults } from "../../../stack/netfaults.js";
import { sleep } from "../../support/wait.js";
import type { LinkFaultSettings } from "../profiles.js";
import type { PhaseState } from "../records.js";
import type { LoneWorker } from "./lone-worker.js";

export type Link = "redis" | "mongodb" | "kafka";

export interface LinkFaultContext {
  nf: Netfaults;
  lone: LoneWorker;
  settings: LinkFaultSettings;
  log: (line: string) => void;
}

const WHAT: Record<Link, string> = { redis: "Redis and its Sentinels", mongodb: "MongoDB", kafka: "Kafka" };

export async function linkCut(p: PhaseState, ctx: LinkFaultContext, link: Link): Promise<void> {
  const { nf, lone } = ctx;
  const w = await lone.get();
  p.notes.push((await lone.owns()).line);
  const ports = lone.ctx.ports[link];
  p.injectAt = Date.now();
  nf.cut(lone.ctx.host, ports);
  const from = w.wp.log.length;
  ctx.log(`  ${w.id} cut from ${WHAT[link]} (ports ${ports.join(", ")}; silent, no RST) for ${ctx.settings.cutMs / 1000} s`);
  await sleep(ctx.settings.cutMs);
  nf.uncut(lone.ctx.host);
  p.healedAt = Date.now();
  const warned = w.wp.log.slice(from).filter((l) => /"level":(40|50)/.test(l) && !l.includes('"component":"kafkajs"'));
  p.notes.push(
    `${w.id} cut from ${WHAT[link]} for ${((p.healedAt - p.injectAt) / 1000).toFixed(1)} s: ${warned.length} warnings of its own${
      warned[0] ? `, first: ${msg(warned[0])}` : ""
    }`,
  );
  ctx.log(`  healed: ${p.notes.at(-1)}`);
}

export async function linkLatency(p: PhaseState, ctx: LinkFaultContext, link: Exclude<Link, "mongodb">): Promise<void> {
  const { nf, lone } = ctx;
  const w = await lone.get();
  p.notes.push((await lone.owns()).line);
  const { roundTripMs, jitterMs, ms } = ctx.settings.latency;
  p.injectAt = Date.now();
  await nf.latency(lone.ctx.host, roundTripMs, jitterMs, lone.ctx.ports[link]);
  ctx.log(`  ${w.id}: ${roundTripMs} ± ${jitterMs} ms round trip on its ${WHAT[link]} links for ${ms / 1000} s`);
  await sleep(ms);
  await nf.calm();
  p.healedAt = Date.now();
  p.notes.push(`${roundTripMs} ± ${jitterMs} ms on ${w.id}'s ${WHAT[link]} links for ${((p.healedAt - p.injectAt) / 1000).toFixed(1)} s`);
}

/** A worker log line's message, short. */
export function msg(line: string): string {
  try {
    return (JSON.parse(line) as { msg: string }).msg.slice(0, 160);
  } catch {
    return line.slice(0, 160);
  }
}
