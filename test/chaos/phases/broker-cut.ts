/**
 * `broker-cut`, `coordinator-cut`, `broker-isolated` (issue #28, the network profile on three
 * brokers): one Kafka node, each running as a host of its own (stack/netfaults.ts), is cut while it
 * keeps running — nothing is killed, no connection is reset:
 * - `broker-cut`: the leader of the busiest request partition (home of most sequences) cut from the
 *   other two nodes, i.e. from replication and the controller quorum; workers and clients still
 *   reach it, and it still believes it leads its partitions and coordinates its groups;
 * - `coordinator-cut`: the same for the node that coordinates the workers' consumer group (the
 *   leader of its `__consumer_offsets` partition), so that two nodes may each believe they are the
 *   group's coordinator;
 * - `broker-isolated`: the busiest partition's leader cut from everything (the other nodes, the
 *   workers, the clients; its connections to itself go on).
 * The other two nodes keep a quorum, fence the cut node after `broker.session.timeout.ms` and elect
 * new leaders; writes the cut node takes (acks=all) never reach the others' copies and are never
 * acknowledged. After `cutMs` the cut is healed, the node learns what it missed and truncates, and
 * the phase waits until every request partition has all three copies in sync again, so the next
 * phase cuts a whole cluster. The run's checks (duplicates, order, every request answered or coded,
 * idd audit, the gapless series) then say what the cut cost.
 */

import { homePartition } from "../../../src/protocol/home-partition.js";
import { ServedAdmin } from "../../../stack/kafka-admin.js";
import type { Host, Netfaults } from "../../../stack/netfaults.js";
import { sleep } from "../../support/wait.js";
import type { PhaseState } from "../records.js";

export type BrokerCutKind = "broker-cut" | "coordinator-cut" | "broker-isolated";

export interface BrokerCutContext {
  nf: Netfaults;
  /** The nodes' addresses and hosts, by broker id − 1. */
  brokers: readonly string[];
  hosts: readonly Host[];
  requestTopic: string;
  partitions: number;
  groupId: string;
  sequences: readonly string[];
  cutMs: number;
  /** Resolves true once every sequence answered one probe with numbers. */
  probeAll: () => Promise<boolean>;
  log: (line: string) => void;
}

/** `__consumer_offsets` partitions (stack/kafka.ts: offsets.topic.num.partitions). */
const OFFSETS_PARTITIONS = 8;

/** Java's String.hashCode, as Kafka hashes a group id to its coordinator's partition. */
export function javaStringHash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  return h;
}

/** The `__consumer_offsets` partition whose leader coordinates `groupId` (Kafka's Utils.abs(hash) % n). */
export function coordinatorPartition(groupId: string, partitions = OFFSETS_PARTITIONS): number {
  const h = javaStringHash(groupId);
  return (h === -2147483648 ? 0 : Math.abs(h)) % partitions;
}

interface Partition {
  leader: number;
  isr: number[];
}

/** Leaders and in-sync replicas of `topics` as the nodes at `brokers` see them (no waiting for every node). */
async function view(brokers: readonly string[], topics: readonly string[]): Promise<Map<string, Partition[]>> {
  const admin = new ServedAdmin([...brokers], "idd-chaos-broker-cut");
  try {
    const all = await admin.allTopicsMetadata();
    const out = new Map<string, Partition[]>();
    for (const t of all.filter((t) => topics.includes(t.name)))
      out.set(
        t.name,
        [...t.partitions].sort((a, b) => a.partitionId - b.partitionId).map((p) => ({ leader: p.leader, isr: [...p.isr] })),
      );
    return out;
  } finally {
    await admin.close().catch(() => {});
  }
}

/** `what`'s value once `probe` returns one, polling every 250 ms; undefined after `timeoutMs`. */
async function until<T>(timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined || Date.now() > deadline) return v;
    await sleep(250);
  }
}

export async function brokerCut(p: PhaseState, ctx: BrokerCutContext, kind: BrokerCutKind): Promise<void> {
  const homes = new Map<number, number>();
  for (const s of ctx.sequences) {
    const h = homePartition(s, ctx.partitions);
    homes.set(h, (homes.get(h) ?? 0) + 1);
  }
  const [busiest, n] = [...homes].sort(([, a], [, b]) => b - a)[0] as [number, number];
  const offsets = coordinatorPartition(ctx.groupId);
  const before = await view(ctx.brokers, [ctx.requestTopic, "__consumer_offsets"]);
  const requestLeader = before.get(ctx.requestTopic)?.[busiest]?.leader;
  const coordinator = before.get("__consumer_offsets")?.[offsets]?.leader;
  const victim = kind === "coordinator-cut" ? coordinator : requestLeader;
  const host = victim === undefined ? undefined : ctx.hosts[victim - 1];
  if (victim === undefined || host === undefined) throw new Error(`no leader known for the ${kind}'s target`);
  const led = (before.get(ctx.requestTopic) ?? []).flatMap((q, i) => (q.leader === victim ? [i] : []));
  p.notes.push(
    `broker ${victim} (idd-${host}) leads ${ctx.requestTopic} [${led.join(",")}] (busiest ${busiest}, home of ${n} sequences: led by ${requestLeader}) and the group's coordinator is broker ${coordinator} (__consumer_offsets-${offsets})`,
  );
  const others = ctx.hosts.filter((h) => h !== host);
  const survivors = ctx.brokers.filter((_, i) => i !== victim - 1);
  p.injectAt = Date.now();
  if (kind === "broker-isolated") ctx.nf.isolate(host);
  else ctx.nf.partition([host], others);
  ctx.log(
    `  broker ${victim} cut from ${kind === "broker-isolated" ? "everything" : `the other brokers (${others.join(", ")}); workers and clients still reach it`} for ${ctx.cutMs / 1000} s`,
  );

  // While the cut lasts: when the other two move its leaderships away, and when every sequence answers.
  let answeredAt: number | undefined;
  const probing = ctx.probeAll().then((ok) => {
    if (ok) answeredAt = Date.now();
  });
  const moved = await until(ctx.cutMs - 1000, async () => {
    const v = await view(survivors, [ctx.requestTopic, "__consumer_offsets"]);
    const busy = v.get(ctx.requestTopic)?.[busiest]?.leader;
    const coord = v.get("__consumer_offsets")?.[offsets]?.leader;
    return busy !== undefined && busy !== victim && busy >= 0 && coord !== victim && coord !== undefined && coord >= 0
      ? { busy, coord, at: Date.now() }
      : undefined;
  });
  p.notes.push(
    moved
      ? `the other brokers lead ${ctx.requestTopic}-${busiest} (broker ${moved.busy}) and coordinate the group (broker ${moved.coord}) ${((moved.at - p.injectAt) / 1000).toFixed(1)} s into the cut`
      : `the other brokers had not moved ${ctx.requestTopic}-${busiest} and the coordinator away from broker ${victim} ${((ctx.cutMs - 1000) / 1000).toFixed(0)} s into the cut`,
  );
  await sleep(Math.max(0, p.injectAt + ctx.cutMs - Date.now()));
  p.notes.push(
    answeredAt !== undefined && answeredAt <= Date.now()
      ? `every sequence answered ${((answeredAt - p.injectAt) / 1000).toFixed(1)} s into the cut`
      : "NOT every sequence answered while the cut lasted",
  );
  ctx.nf.heal();
  p.healedAt = Date.now();
  ctx.log(`  healed after ${((p.healedAt - p.injectAt) / 1000).toFixed(1)} s: ${p.notes.slice(1).join("; ")}`);
  await probing;

  // Whole again: every request partition has its three copies in sync.
  const whole = await until(90_000, async () => {
    const v = await view(ctx.brokers, [ctx.requestTopic, "__consumer_offsets"]);
    const parts = [...(v.get(ctx.requestTopic) ?? []), ...(v.get("__consumer_offsets") ?? [])];
    return parts.length > 0 && parts.every((q) => q.isr.length === ctx.brokers.length) ? Date.now() : undefined;
  });
  p.notes.push(
    whole !== undefined
      ? `all copies in sync again ${((whole - p.healedAt) / 1000).toFixed(1)} s after the heal`
      : "NOT all copies in sync 90 s after the heal",
  );
  if (whole === undefined) p.failures.push(`broker ${victim}'s copies not back in sync 90 s after the heal`);
}
