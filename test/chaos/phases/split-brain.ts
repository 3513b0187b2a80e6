/**
 * `split-brain` (issue #28, the network profile): a packet-level partition on loopback
 * (stack/netfaults.ts) between side A — the Sentinel group's primary P and half the workers — and
 * side B — the replica Q, the three Sentinels and the other workers; Kafka and MongoDB stay
 * reachable from both. The Sentinels promote Q within seconds; side A's workers never hear of it
 * and keep writing to P. Meanwhile ownership moves between the sides (a side-A worker stopped with
 * SIGTERM, a side-B worker started); after `partitionMs` the partition heals and the Sentinels
 * demote P, discarding its writes. With `zombieMs`, side A's remaining workers are also cut from
 * Kafka for a while (zombies that keep P). The checks of the whole run (duplicates, causal order, every
 * request answered or coded) then say whether the two timelines leaked into the answers.
 */
import { SENTINEL_MASTER } from "../../../stack/cluster.js";
import type { Host, Identity, Netfaults } from "../../../stack/netfaults.js";
import type { StackLayout } from "../../../stack/paths.js";
import { redisCall, redisInfo } from "../../../stack/redis.js";
import { sleep, withTimeout } from "../../support/wait.js";
import type { WorkerPool } from "../pool.js";
import type { PhaseState } from "../records.js";

export interface SplitBrainContext {
  nf: Netfaults;
  pool: WorkerPool;
  layout: StackLayout;
  partitionMs: number;
  /** When, after the partition, ownership moves (a side-A worker stopped, a side-B worker started). */
  moveAfterMs: number;
  sideA: Host;
  sideB: Host;
  /**
   * The zombie: after ownership moved, side A's remaining workers are cut from Kafka (the broker's
   * `kafkaPorts`) for this long while they keep Redis P, so the group gives their partitions to
   * side B; 0: no zombie. Before the ownership lease, such a worker answered from P what side B
   * answered from Q (the issue's 1,168 and 2,819 duplicates).
   */
  zombieMs: number;
  kafkaPorts: number[];
  as: (h: Host) => Identity & { host: string };
  log: (line: string) => void;
}

/** What each Sentinel calls the primary, and each node's role: "s1→:36400 s2→… | :36400 master, :36401 slave". */
async function topology(l: StackLayout): Promise<{ line: string; sentinels: (number | undefined)[]; roles: Record<number, string> }> {
  const sentinels = await Promise.all(
    l.ports.sentinels.map(async (port) => {
      const r = (await redisCall(port, "SENTINEL", "get-master-addr-by-name", SENTINEL_MASTER).catch(() => undefined)) as
        | string[]
        | undefined;
      return r ? Number(r[1]) : undefined;
    }),
  );
  const roles: Record<number, string> = {};
  for (const port of [l.ports.redisPrimary, l.ports.redisReplica])
    roles[port] = (await redisInfo(port, "replication").catch(() => undefined))?.role ?? "down";
  const line = `${sentinels.map((p, i) => `s${i + 1}→${p ? `:${p}` : "?"}`).join(" ")} | ${Object.entries(roles)
    .map(([p, r]) => `:${p} ${r}`)
    .join(", ")}`;
  return { line, sentinels, roles };
}

export async function splitBrain(p: PhaseState, ctx: SplitBrainContext): Promise<void> {
  const { nf, pool, layout: l } = ctx;
  p.notes.push(`before: ${(await topology(l)).line}`);
  nf.partition([ctx.sideA], [ctx.sideB]);
  p.injectAt = Date.now();
  ctx.log(`  partition ${ctx.sideA} | ${ctx.sideB} (Kafka and MongoDB reachable from both) for ${ctx.partitionMs / 1000} s`);

  // The Sentinels (side B) promote Q; side A's workers go on writing to P.
  const promoteDeadline = Date.now() + Math.min(ctx.moveAfterMs, 15_000);
  let promotedAfter: number | undefined;
  while (Date.now() < promoteDeadline) {
    const t = await topology(l);
    if (t.roles[l.ports.redisReplica] === "master") {
      promotedAfter = Date.now() - p.injectAt;
      break;
    }
    await sleep(250);
  }
  p.notes.push(
    promotedAfter === undefined
      ? `Q not promoted within ${(Date.now() - p.injectAt) / 1000} s`
      : `Q :${l.ports.redisReplica} promoted ${(promotedAfter / 1000).toFixed(1)} s into the partition; P :${l.ports.redisPrimary} still a primary: ${(await topology(l)).roles[l.ports.redisPrimary]}`,
  );
  await sleep(Math.max(0, p.injectAt + ctx.moveAfterMs - Date.now()));

  // Ownership moves between the sides: a side-A worker leaves (SIGTERM), a side-B worker joins.
  const victim = pool.live().find((w) => w.host === ctx.sideA);
  if (victim) {
    victim.expectExit = true;
    victim.wp.proc.kill("SIGTERM");
    await withTimeout(victim.wp.exited, 20_000, "side-A worker exit").catch(() => victim.wp.proc.kill("SIGKILL"));
  }
  const fresh = pool.start(ctx.as(ctx.sideB));
  p.notes.push(
    `+${((Date.now() - p.injectAt) / 1000).toFixed(1)} s: ${victim ? `${victim.id} (side A) stopped` : "no side-A worker to stop"}, ${fresh.id} started on side B`,
  );
  ctx.log(`  ${p.notes.at(-1)}`);

  if (ctx.zombieMs > 0) {
    await sleep(2000);
    nf.cut(ctx.sideA, ctx.kafkaPorts);
    const cutAt = Date.now();
    p.notes.push(
      `+${((cutAt - p.injectAt) / 1000).toFixed(1)} s: side A's workers cut from Kafka (keeping P) for ${ctx.zombieMs / 1000} s`,
    );
    ctx.log(`  ${p.notes.at(-1)}`);
    await sleep(Math.max(0, Math.min(cutAt + ctx.zombieMs, p.injectAt + ctx.partitionMs) - Date.now()));
    nf.uncut(ctx.sideA);
    p.notes.push(`+${((Date.now() - p.injectAt) / 1000).toFixed(1)} s: side A reaches Kafka again (the partition stays)`);
    ctx.log(`  ${p.notes.at(-1)}`);
  }

  await sleep(Math.max(0, p.injectAt + ctx.partitionMs - Date.now()));
  p.notes.push(`at heal: ${(await topology(l)).line}`);
  nf.heal();
  p.healedAt = Date.now();
  ctx.log(`  healed after ${((p.healedAt - p.injectAt) / 1000).toFixed(1)} s`);

  // The Sentinels demote P once they reach it again.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const t = await topology(l);
    const agreed = new Set(t.sentinels).size === 1 && t.sentinels[0] !== undefined;
    const primaries = Object.values(t.roles).filter((r) => r === "master").length;
    if ((agreed && primaries === 1) || Date.now() > deadline) {
      p.notes.push(
        `${agreed && primaries === 1 ? "one primary again" : "NOT one primary"} ${((Date.now() - p.healedAt) / 1000).toFixed(1)} s after heal: ${t.line}`,
      );
      break;
    }
    await sleep(250);
  }
}
