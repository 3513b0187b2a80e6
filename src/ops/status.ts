/**
 * The status snapshot behind `/status.json`, the `/status` page and `idd status`: what one worker
 * knows (its counters, partitions, breakers, recent grants and errors, from the instrumentation
 * events it emits anyway) plus the pool as the broker sees it (every partition of the request
 * topic, its owner and lag), asked for at most once a second however often the page polls.
 * Everything a snapshot holds is bounded: recent grants and errors are rings, per-sequence totals
 * are kept for at most `maxSequences` names.
 */

import type { Instrumentation } from "../core/events.js";
import type { CounterSnapshot } from "../issuing/sources/counter/counter.js";
import { homePartition } from "../protocol/home-partition.js";
import type { Forecast } from "../sequences/capacity.js";
import type { GroupPartition } from "../transport/kafka/index.js";
import type { SequenceForecast } from "./capacity-watch.js";
import { leftText, runsOutText } from "./forecast-text.js";
import type { ReadinessState } from "./readiness.js";

/** Format version of the snapshot; a reader refuses others. */
export const STATUS_VERSION = 1;
/** The rate shown is numbers issued over this window (the counters' own rate decays slowly and never while idle). */
const RATE_WINDOW_S = 10;
const RECENT_GRANTS = 60;
const RECENT_ERRORS = 30;
const POOL_CACHE_MS = 1000;
/** Longer user data (a hostile sequence name in a refused request) is cut: the page is for people. */
const MAX_NAME_CHARS = 80;

export interface SequenceStatus {
  sequence: string;
  period: string | null;
  /** The sequence's home partition, where it is served whatever partition clients send to, and the worker owning it (null: unowned or unknown). */
  partition: number | null;
  owner: string | null;
  /** Numbers a second this worker issued over the last RATE_WINDOW_S complete seconds. */
  ratePerSecond: number;
  /** Counter kinds only (snowflake ids need no blocks): null otherwise. */
  headroomNumbers: string | null;
  /** Headroom at that rate, in minutes; null while idle or for sequences without a counter. */
  headroomMinutes: number | null;
  blockSize: number | null;
  inMemory: string | null;
  /** Answered by this worker since it started: requests (any status) and numbers. */
  requests: number;
  numbers: number;
  /**
   * What is left before it runs out and when, at the rate of the counter's last sample windows
   * (src/sequences/capacity.ts): one per bound (a snowflake sequence has its time field and its
   * worker ids). Empty before the counter's first block. Absent in snapshots of older workers.
   */
  forecasts?: (Forecast & { text: { left: string; runsOut: string } })[];
}

export interface PoolStatus {
  group: string;
  topic: string;
  /** The consumer group's state (Stable, PreparingRebalance, Empty, …) and member count. */
  state: string;
  members: number;
  partitions: { partition: number; owner: string | null; host: string | null; lag: number; committed: string | null; end: string }[];
  /** When the broker was asked (cached for a second). */
  at: number;
}

export interface StatusSnapshot {
  version: typeof STATUS_VERSION;
  at: number;
  worker: {
    id: string;
    startedAt: number;
    partitions: number[];
    ready: ReadinessState | null;
    /** The request topic's partition count it routes by, and the requests it forwarded home (sent off-home by their clients). */
    routing: { partitions: number; forwarded: number };
  };
  /** Sequences this worker serves; other workers' are on their own pages (the pool part says who owns what). */
  sequences: SequenceStatus[];
  /** The whole pool, from the broker; `error` when the broker could not be asked. */
  pool: PoolStatus | { error: string };
  grants: { at: number; sequence: string; period: string | null; first: string; last: string; size: number }[];
  /**
   * Gapless sequences: their numbers per state in MongoDB (every period; the whole pool's, as this
   * worker's last sweep counted them at `countedAt`), and how many this worker voided as expired.
   * Absent in snapshots of workers from before gapless numbering.
   */
  gapless?: { sequence: string; pending: number; confirmed: number; voided: number; expiredHere: number; countedAt: number }[];
  /** False when another worker counts them (the one that owns request partition 0): then `gapless` is empty. */
  gaplessCounted?: boolean;
  breakers: { dependency: string; open: boolean; since: number | null }[];
  errors: {
    recent: { at: number; sequence: string; code: string; requests: number; partition: number }[];
    totals: { code: string; requests: number }[];
  };
}

export interface StatusSources {
  events: Instrumentation;
  workerId: string;
  groupId: string;
  requestTopic: string;
  /** The request topic's partition count the worker routes by: a sequence is served on its home partition under it. */
  requestPartitions: () => number;
  counters: () => CounterSnapshot[];
  /** The forecasts of sequences without a counter (snowflake, gapless), and of the counters' (capacity-watch.ts). */
  forecasts?: () => SequenceForecast[];
  readiness?: () => ReadinessState;
  pool: (groupId: string, topic: string) => Promise<{ state: string; members: number; partitions: GroupPartition[] }>;
  maxSequences: number;
  clock?: () => number;
}

const withText = (f: Forecast) => ({ ...f, text: { left: leftText(f), runsOut: runsOutText(f) } });

/** What the Kafka client id of a worker is (parts.ts names it `idd-<worker id>`): the worker id back. */
const workerOf = (clientId: string) => (clientId.startsWith("idd-") ? clientId.slice(4) : clientId);
const cut = (s: string) => (s.length > MAX_NAME_CHARS ? `${s.slice(0, MAX_NAME_CHARS)}…` : s);

/** The broker's view of the group as the snapshot shows it: owners by worker id. */
export function poolStatus(p: {
  group: string;
  topic: string;
  state: string;
  members: number;
  partitions: GroupPartition[];
  at: number;
}): PoolStatus {
  return {
    ...p,
    partitions: p.partitions.map((x) => ({
      partition: x.partition,
      owner: x.owner ? workerOf(x.owner.clientId) : null,
      host: x.owner?.host ?? null,
      lag: x.lag,
      committed: x.committed,
      end: x.end,
    })),
  };
}

interface Served {
  requests: number;
  numbers: number;
  /** Numbers per second of the last RATE_WINDOW_S seconds: [epoch second, numbers] pairs, oldest first. */
  seconds: [number, number][];
  /** The second it was first answered: a younger sequence's rate is over the seconds it has been served. */
  since: number;
}

export class StatusModel {
  readonly #s: StatusSources;
  readonly #clock: () => number;
  readonly #startedAt: number;
  #forwarded = 0;
  readonly #served = new Map<string, Served>();
  readonly #grants: StatusSnapshot["grants"] = [];
  readonly #errors: StatusSnapshot["errors"]["recent"] = [];
  readonly #errorTotals = new Map<string, number>();
  readonly #breakers = new Map<string, { open: boolean; since: number | null }>([
    ["redis", { open: false, since: null }],
    ["mongodb", { open: false, since: null }],
  ]);
  #partitions: number[] = [];
  readonly #gapless = new Map<string, NonNullable<StatusSnapshot["gapless"]>[number]>();
  #gaplessCounted = true;
  #pool: { at: number; value: Promise<PoolStatus | { error: string }> } | undefined;

  constructor(s: StatusSources) {
    this.#s = s;
    this.#clock = s.clock ?? Date.now;
    this.#startedAt = this.#clock();
    s.events.on("dispenser.answered", (e) => {
      for (const c of e.counts) {
        this.#serve(c.sequence, c.requests, c.numbers);
        if (c.status !== "OK") this.#error(e.partition, c.sequence, c.status, c.requests);
      }
    });
    s.events.on("worker.forwarded", (e) => {
      this.#forwarded += e.requests;
    });
    s.events.on("worker.refused", (e) => {
      for (const c of e.counts) this.#error(e.partition, c.sequence, c.code, c.requests);
    });
    s.events.on("worker.assigned", (e) => {
      this.#partitions = [...e.partitions].sort((a, b) => a - b);
    });
    s.events.on("allocation.claimed", (e) => {
      this.#grants.push({
        at: this.#clock(),
        sequence: e.sequence,
        period: e.period,
        first: e.first.toString(),
        last: e.last.toString(),
        size: e.size,
      });
      if (this.#grants.length > RECENT_GRANTS) this.#grants.shift();
    });
    s.events.on("gapless.counts", (e) => {
      this.#gaplessCounted = e.counting ?? true;
      if (!this.#gaplessCounted) {
        this.#gapless.clear(); // the worker that owns request partition 0 counts them now
        return;
      }
      const at = this.#clock();
      for (const g of this.#gapless.values()) Object.assign(g, { pending: 0, confirmed: 0, voided: 0, countedAt: at });
      for (const c of e.counts) this.#gaplessOf(c.sequence, at)[c.state] = c.numbers;
    });
    s.events.on("gapless.expired", (e) => {
      this.#gaplessOf(e.sequence, this.#clock()).expiredHere += e.numbers;
    });
    s.events.on("breaker.state", (e) => this.#breakers.set(e.what, { open: e.open, since: this.#clock() }));
  }

  #serve(sequence: string, requests: number, numbers: number): void {
    let s = this.#served.get(sequence);
    if (!s) {
      // Only sequences that issue numbers get an entry: names that were only refused (any string a
      // client sends) are in the errors ring, and cannot crowd the real ones out of the cap.
      if (numbers === 0 || this.#served.size >= this.#s.maxSequences) return;
      s = { requests: 0, numbers: 0, seconds: [], since: Math.floor(this.#clock() / 1000) };
      this.#served.set(sequence, s);
    }
    s.requests += requests;
    s.numbers += numbers;
    const second = Math.floor(this.#clock() / 1000);
    const last = s.seconds.at(-1);
    if (last && last[0] === second) last[1] += numbers;
    else s.seconds.push([second, numbers]);
    while ((s.seconds[0]?.[0] ?? second) < second - RATE_WINDOW_S) s.seconds.shift();
  }

  #gaplessOf(sequence: string, at: number): NonNullable<StatusSnapshot["gapless"]>[number] {
    let g = this.#gapless.get(sequence);
    if (!g) {
      g = { sequence: cut(sequence), pending: 0, confirmed: 0, voided: 0, expiredHere: 0, countedAt: at };
      if (this.#gapless.size < this.#s.maxSequences) this.#gapless.set(sequence, g);
    }
    return g;
  }

  #error(partition: number, sequence: string, code: string, requests: number): void {
    this.#errors.push({ at: this.#clock(), sequence: cut(sequence), code, requests, partition });
    if (this.#errors.length > RECENT_ERRORS) this.#errors.shift();
    this.#errorTotals.set(code, (this.#errorTotals.get(code) ?? 0) + requests);
  }

  /** The pool view, from the broker at most once a second (concurrent pollers share one request). */
  #poolView(): Promise<PoolStatus | { error: string }> {
    const now = this.#clock();
    if (this.#pool && now - this.#pool.at < POOL_CACHE_MS) return this.#pool.value;
    const { groupId: group, requestTopic: topic } = this.#s;
    const value = this.#s.pool(group, topic).then(
      (p) => poolStatus({ group, topic, ...p, at: now }),
      (e: unknown) => ({ error: (e as Error).message }),
    );
    this.#pool = { at: now, value };
    return value;
  }

  async snapshot(): Promise<StatusSnapshot> {
    const pool = await this.#poolView();
    const now = this.#clock();
    const poolPartitions = "error" in pool ? undefined : pool.partitions;
    // Where the sequence is served, whatever partition its clients send to (they are forwarded home).
    const partitionCount = Math.max(this.#s.requestPartitions(), poolPartitions?.length ?? 0);
    const place = (sequence: string) => {
      const partition = homePartition(sequence, partitionCount);
      const owner =
        poolPartitions?.find((p) => p.partition === partition)?.owner ?? (this.#partitions.includes(partition) ? this.#s.workerId : null);
      return { partition, owner };
    };
    // Over the last complete seconds (the current one is partial), at most RATE_WINDOW_S of them.
    const rate = (sequence: string) => {
      const s = this.#served.get(sequence);
      const second = Math.floor(now / 1000);
      const span = Math.min(RATE_WINDOW_S, second - (s?.since ?? second));
      if (!s || span === 0) return 0;
      return s.seconds.filter(([t]) => t >= second - span && t < second).reduce((n, [, k]) => n + k, 0) / span;
    };
    const counters = this.#s.counters();
    const rows: SequenceStatus[] = counters.map((c) => {
      const r = rate(c.sequence);
      const served = this.#served.get(c.sequence);
      return {
        sequence: c.sequence,
        period: c.period,
        ...place(c.sequence),
        ratePerSecond: r,
        headroomNumbers: c.headroom.toString(),
        headroomMinutes: r > 0 ? Number(c.headroom) / r / 60 : null,
        blockSize: c.blockSize,
        inMemory: c.inMemory.toString(),
        requests: served?.requests ?? 0,
        numbers: served?.numbers ?? 0,
        forecasts: c.forecast ? [withText(c.forecast)] : [],
      };
    });
    // Sequences answered without a counter here (snowflake ids, gapless numbers; or only errors,
    // e.g. unknown ones), with the forecasts of their layout or their gapless counter.
    const withCounter = new Set(counters.map((c) => c.sequence));
    const others = new Map<string, SequenceForecast[]>();
    for (const f of this.#s.forecasts?.() ?? [])
      if (!withCounter.has(f.sequence)) others.set(f.sequence, [...(others.get(f.sequence) ?? []), f]);
    for (const [sequence, s] of this.#served) {
      if (withCounter.has(sequence)) continue;
      const forecasts = others.get(sequence) ?? [];
      rows.push({
        sequence: cut(sequence),
        period: forecasts.find((f) => f.period !== null)?.period ?? null,
        ...place(sequence),
        ratePerSecond: rate(sequence),
        headroomNumbers: null,
        headroomMinutes: null,
        blockSize: null,
        inMemory: null,
        requests: s.requests,
        numbers: s.numbers,
        forecasts: forecasts.map((f) => withText(f.forecast)),
      });
    }
    rows.sort((a, b) => (a.sequence < b.sequence ? -1 : a.sequence > b.sequence ? 1 : (a.period ?? "") < (b.period ?? "") ? -1 : 1));
    return {
      version: STATUS_VERSION,
      at: now,
      worker: {
        id: this.#s.workerId,
        startedAt: this.#startedAt,
        partitions: this.#partitions,
        ready: this.#s.readiness?.() ?? null,
        routing: { partitions: this.#s.requestPartitions(), forwarded: this.#forwarded },
      },
      sequences: rows,
      pool,
      grants: [...this.#grants],
      gaplessCounted: this.#gaplessCounted,
      gapless: [...this.#gapless.values()].map((g) => ({ ...g })).sort((a, b) => (a.sequence < b.sequence ? -1 : 1)),
      breakers: [...this.#breakers].map(([dependency, b]) => ({ dependency, ...b })),
      errors: {
        recent: [...this.#errors],
        totals: [...this.#errorTotals].map(([code, requests]) => ({ code, requests })).sort((a, b) => b.requests - a.requests),
      },
    };
  }
}
