/**
 * The network profile's one-worker faults (phases/link-faults.ts, phases/clock-skew.ts) act on one
 * worker on a host of its own (`idd-h1`), started once, before the first of them: its links to Redis
 * and its Sentinels and to Kafka go through toxiproxy from its start (`route` moves only new
 * connections), and its wall clock follows a clock file (`fakeTimeFileEnv`), so a cut, a latency or a
 * clock step needs no restart. Its worker id is picked so that kafkajs's round-robin assignor (members
 * sorted by member id, `<clientId>-<uuid>`; partition i to member i mod n) hands it the snowflake
 * sequence's home partition: the clock faults then hit snowflake ids; the phases note what it owns.
 */
import { join } from "node:path";
import { homePartition } from "../../../src/protocol/home-partition.js";
import { fakeTimeFileEnv, type Host, type Netfaults } from "../../../stack/netfaults.js";
import type { PoolWorker, WorkerPool } from "../pool.js";

export interface LoneWorkerContext {
  nf: Netfaults;
  pool: WorkerPool;
  host: Host;
  /** The Redis primary, replica and Sentinels; the brokers; MongoDB. */
  ports: { redis: number[]; kafka: number[]; mongodb: number[] };
  /** Where the clock file goes (readable by the host users). */
  dir: string;
  snowflake: string;
  partitions: number;
  log: (line: string) => void;
}

export class LoneWorker {
  #w: PoolWorker | undefined;

  constructor(readonly ctx: LoneWorkerContext) {}

  get clockFile(): string {
    return join(this.ctx.dir, `clock-${this.ctx.host}`);
  }

  /** The worker, started (routed, under its clock file) and assigned if it was not running. */
  async get(): Promise<PoolWorker> {
    const { nf, pool, host, ports } = this.ctx;
    if (this.#w && this.#w.wp.proc.exitCode === null && this.#w.wp.proc.signalCode === null) return this.#w;
    await nf.route(host, [...ports.redis, ...ports.kafka]);
    const live = pool.live().map((w) => w.id);
    const id = loneId(live, homePartition(this.ctx.snowflake, this.ctx.partitions));
    const w = pool.start({ ...nf.identity(host), host }, { id, env: fakeTimeFileEnv(nf.tools, this.clockFile) });
    this.ctx.log(`  ${w.id} started as idd-${host} (Redis and Kafka through toxiproxy, clock from ${this.clockFile})`);
    await pool.firstAssignment([w], `${w.id}'s first assignment`);
    this.#w = w;
    return w;
  }

  /** What the worker owns now, and whether that includes the snowflake sequence's home. */
  async owns(): Promise<{ line: string; snowflakeHome: boolean }> {
    const w = this.#w;
    const view = await this.ctx.pool.groupView();
    const ps = w ? view?.members.get(w.id) : undefined;
    const home = homePartition(this.ctx.snowflake, this.ctx.partitions);
    const snowflakeHome = ps?.includes(home) ?? false;
    return {
      line: `${w?.id ?? "no worker"} owns ${ps ? `[${ps.join(",")}]` : "nothing"}${snowflakeHome ? ` (the snowflake's home ${home})` : ` (not the snowflake's home ${home})`}`,
      snowflakeHome,
    };
  }
}

/**
 * A worker id that sorts, as `idd-<id>-<uuid>`, at index `home mod (n + 1)` among the live workers',
 * so the round-robin assignor gives it partition `home` (placedIds).
 */
export function loneId(live: readonly string[], home: number): string {
  return placedIds(live, [home % (live.length + 1)])[0] as string;
}

/**
 * Ids for new workers that sort, as `idd-<id>-<uuid>`, at the indexes `at` (distinct, ascending) of
 * the group they join the live workers in, so the round-robin assignor gives the one at index i the
 * partitions p with p mod (group size) = i. Each is `<the id before it>-lone`, or `a-lone` at index
 * 0, then `suffix` (`<id>-lone` sorts right after `<id>`'s member id: '-' then 'l' is above any
 * uuid's first digit, and below `<id>0`…).
 */
export function placedIds(live: readonly string[], at: readonly number[], suffix = ""): string[] {
  const sorted = [...live].sort((a, b) => (`idd-${a}-` < `idd-${b}-` ? -1 : 1));
  const group: string[] = [];
  const ids: string[] = [];
  const size = sorted.length + at.length;
  for (let i = 0; i < size; i++) {
    if (!at.includes(i)) {
      group.push(sorted.shift() as string);
      continue;
    }
    const before = group.at(-1);
    const id = `${before === undefined ? "a" : before}-lone${suffix}`;
    group.push(id);
    ids.push(id);
  }
  return ids;
}
