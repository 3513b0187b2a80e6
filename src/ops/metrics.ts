/**
 * Prometheus metrics (prom-client), a listener of the instrumentation events plus values read at
 * scrape time (counters' headroom, round trips, breaker states). Names follow Prometheus' rules
 * (`idd_` prefix, `_total` counters, `_seconds` durations). Sequence names are user data: the
 * first `maxSequences` seen get their own label value, the rest are counted as `other`.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { Instrumentation } from "../core/events.js";
import type { CounterSnapshot } from "../issuing/sources/counter/counter.js";
import type { SequenceForecast } from "./capacity-watch.js";

export interface MetricsSources {
  events: Instrumentation;
  /** Counters of this worker, read at scrape time. */
  counters: () => CounterSnapshot[];
  /** Round trips so far, read at scrape time. */
  roundTrips: () => { redis: number; mongodb: number };
  /** MongoDB operations waiting for a connection, and those refused (src/storage/in-flight.ts), read at scrape time. */
  mongodbLoad?: () => { inFlight: number; waiting: number; timedOut: number; shed: number; poolTimeouts: number };
  maxSequences: number;
  /** Whether /readyz says ready, read at scrape time (absent: the gauge is not exported). */
  ready?: () => boolean;
  /** The capacity forecasts of the sequences this worker serves, read at scrape time (capacity-watch.ts). */
  forecasts?: () => SequenceForecast[];
}

export function createMetrics(s: MetricsSources): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "idd_" });
  const known = new Set<string>();
  const label = (sequence: string) => {
    if (known.has(sequence)) return sequence;
    if (known.size >= s.maxSequences) return "other";
    known.add(sequence);
    return sequence;
  };
  const requests = new Counter({
    name: "idd_requests_total",
    help: "Requests answered, by sequence and status (OK or the error code)",
    labelNames: ["sequence", "status"],
    registers: [registry],
  });
  const numbers = new Counter({
    name: "idd_numbers_total",
    help: "Numbers issued, by sequence (answers sent again to retries and redeliveries are dedupe hits, not counted here)",
    labelNames: ["sequence"],
    registers: [registry],
  });
  const deduped = new Counter({
    name: "idd_dedupe_hits_total",
    help: "Requests answered with a recorded answer (retries)",
    registers: [registry],
  });
  const takeovers = new Counter({
    name: "idd_owner_token_takeovers_total",
    help: "Request partitions this worker took over, each under a new gen (the name predates gens)",
    registers: [registry],
  });
  const steps = new Histogram({
    name: "idd_step_seconds",
    help: "Time to parse, answer, deliver and commit one step of a fetched batch",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const stepPhases = new Histogram({
    name: "idd_step_phase_seconds",
    help: "Time of each phase of a step: parse (records to requests, reply addresses checked), issue (routing, issuing, recording in Redis), deliver (replies, forwards and dead letters acknowledged)",
    labelNames: ["phase"],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const waits = new Histogram({
    name: "idd_request_wait_seconds",
    help: "Time a request was in Kafka before the step that handles it began, from its record's timestamp (its sender's clock): from=client as a client sent it, from=worker as a worker forwarded it home",
    labelNames: ["from"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const stepRecords = new Histogram({
    name: "idd_step_records",
    help: "Records per step",
    buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000],
    registers: [registry],
  });
  const lag = new Gauge({
    name: "idd_consumer_lag",
    help: "Records behind the end of the request partition, after this worker's last step",
    labelNames: ["partition"],
    registers: [registry],
  });
  const assigned = new Gauge({ name: "idd_partitions_assigned", help: "Request partitions this worker owns", registers: [registry] });
  const claims = new Counter({
    name: "idd_blocks_claimed_total",
    help: "Blocks claimed from Redis, by sequence",
    labelNames: ["sequence"],
    registers: [registry],
  });
  const raises = new Counter({
    name: "idd_reservations_raised_total",
    help: "Reservations raised (MongoDB, then Redis), by sequence",
    labelNames: ["sequence"],
    registers: [registry],
  });
  const breaker = new Gauge({
    name: "idd_breaker_open",
    help: "1 while calls to the dependency fail fast (it is considered unreachable)",
    labelNames: ["dependency"],
    registers: [registry],
  });
  for (const d of ["redis", "mongodb"]) breaker.set({ dependency: d }, 0);
  const refused = new Counter({
    name: "idd_requests_refused_total",
    help: "Requests turned away before any sequence was looked at (unreadable, bad name, no reply address, reply undeliverable), by code; no sequence label: the names are untrusted",
    labelNames: ["code"],
    registers: [registry],
  });
  const unreadable = new Counter({
    name: "idd_batches_unreadable_total",
    help: "Fetched record batches that could not be decoded (unknown codec, corrupt payload), dead-lettered whole with their requests unanswered, by codec",
    labelNames: ["codec"],
    registers: [registry],
  });
  const unreadableRecords = new Counter({
    name: "idd_records_unreadable_total",
    help: "Records in the batches of idd_batches_unreadable_total (by offsets: what the batch spanned)",
    registers: [registry],
  });
  const forwarded = new Counter({
    name: "idd_requests_forwarded_total",
    help: "Requests read on a partition that is not their sequence's home and forwarded there (clients whose partitioner is not Kafka's murmur2 cost one extra hop each)",
    registers: [registry],
  });
  const deadLetters = new Counter({
    name: "idd_dead_letters_total",
    help: "Requests written to the dead-letter topic (no deliverable reply address, unreadable, a reply the broker refused), by code",
    labelNames: ["code"],
    registers: [registry],
  });
  if (s.ready) {
    const ready = s.ready;
    new Gauge({
      name: "idd_ready",
      help: "1 while /readyz says ready (started, in the consumer group, Redis and MongoDB answering or down for less than IDD_READY_OUTAGE_BUDGET_MS), else 0",
      registers: [registry],
      collect() {
        this.set(ready() ? 1 : 0);
      },
    });
  }
  const partitions = new Gauge({
    name: "idd_request_partitions",
    help: "The request topic's partition count this worker routes by (sequences' home partitions depend on it)",
    registers: [registry],
  });
  const clockBackwards = new Counter({
    name: "idd_snowflake_clock_backwards_total",
    help: "Snowflake takes refused with CLOCK_BACKWARDS: the clock was behind the latest time issued (or the worker id's bound) by more than IDD_SNOWFLAKE_MAX_BACKWARD_WAIT_MS",
    labelNames: ["sequence"],
    registers: [registry],
  });
  const workerIds = new Gauge({
    name: "idd_snowflake_worker_id",
    help: "The worker id this worker leases for a snowflake sequence (-1: none held)",
    labelNames: ["sequence"],
    registers: [registry],
  });

  const gapless = new Gauge({
    name: "idd_gapless_numbers",
    help: "Numbers of each gapless sequence by state (pending, confirmed, voided), as counted by this worker's last sweep (IDD_GAPLESS_SWEEP_MS); only the worker that owns request partition 0 counts them",
    labelNames: ["sequence", "state"],
    registers: [registry],
  });
  const expired = new Counter({
    name: "idd_gapless_expired_total",
    help: "Gapless numbers this worker voided with reason expired: neither confirmed nor voided within the sequence's confirm timeout",
    labelNames: ["sequence"],
    registers: [registry],
  });
  s.events.on("gapless.counts", (e) => {
    gapless.reset();
    for (const c of e.counts) gapless.inc({ sequence: label(c.sequence), state: c.state }, c.numbers);
  });
  s.events.on("gapless.expired", (e) => expired.inc({ sequence: label(e.sequence) }, e.numbers));
  s.events.on("dispenser.answered", (e) => {
    for (const c of e.counts) {
      const sequence = label(c.sequence);
      requests.inc({ sequence, status: c.status }, c.requests);
      if (c.numbers > 0) numbers.inc({ sequence }, c.numbers);
    }
    if (e.deduped > 0) deduped.inc(e.deduped);
  });
  s.events.on("ownership.taken", () => takeovers.inc());
  s.events.on("worker.step", (e) => {
    steps.observe(e.ms / 1000);
    for (const [phase, ms] of Object.entries(e.phases)) stepPhases.observe({ phase }, ms / 1000);
    for (const from of ["client", "worker"] as const) for (const ms of e.waitsMs[from]) waits.observe({ from }, ms / 1000);
    stepRecords.observe(e.records);
    lag.set({ partition: String(e.partition) }, e.lag);
  });
  s.events.on("worker.assigned", (e) => {
    assigned.set(e.partitions.length);
    for (const p of e.lost) lag.remove({ partition: String(p) });
  });
  s.events.on("allocation.claimed", (e) => claims.inc({ sequence: label(e.sequence) }));
  s.events.on("allocation.raised", (e) => raises.inc({ sequence: label(e.sequence) }));
  s.events.on("breaker.state", (e) => breaker.set({ dependency: e.what }, e.open ? 1 : 0));
  s.events.on("worker.refused", (e) => {
    for (const c of e.counts) refused.inc({ code: c.code }, c.requests);
  });
  s.events.on("worker.unreadable", (e) => {
    unreadable.inc({ codec: e.codec });
    unreadableRecords.inc(e.records);
  });
  s.events.on("worker.forwarded", (e) => forwarded.inc(e.requests));
  s.events.on("worker.dead_lettered", (e) => {
    for (const c of e.counts) deadLetters.inc({ code: c.code }, c.requests);
  });
  s.events.on("worker.partitions", (e) => partitions.set(e.partitions));
  s.events.on("snowflake.clock_backwards", (e) => clockBackwards.inc({ sequence: label(e.sequence) }));
  s.events.on("snowflake.lease", (e) => workerIds.set({ sequence: label(e.sequence) }, e.workerId ?? -1));

  new Counter({
    name: "idd_redis_round_trips_total",
    help: "Redis commands and scripts the allocator sent",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(s.roundTrips().redis);
    },
  });
  new Counter({
    name: "idd_mongodb_round_trips_total",
    help: "MongoDB reads and writes",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(s.roundTrips().mongodb);
    },
  });
  const load = s.mongodbLoad;
  if (load) {
    new Gauge({
      name: "idd_mongodb_operations",
      help: "MongoDB operations in flight and waiting for one of the pool's connections, by state",
      labelNames: ["state"],
      registers: [registry],
      collect() {
        const l = load();
        this.set({ state: "in_flight" }, l.inFlight);
        this.set({ state: "waiting" }, l.waiting);
      },
    });
    new Counter({
      name: "idd_mongodb_refused_total",
      help: "MongoDB operations refused for want of a connection: busy (waited the step budget), shed (samples, kept for the next flush), pool_timeout (the driver's checkout)",
      labelNames: ["reason"],
      registers: [registry],
      collect() {
        const l = load();
        this.reset();
        this.inc({ reason: "busy" }, l.timedOut);
        this.inc({ reason: "shed" }, l.shed);
        this.inc({ reason: "pool_timeout" }, l.poolTimeouts);
      },
    });
  }
  const perCounter = (name: string, help: string, value: (c: CounterSnapshot) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ["sequence", "period"],
      registers: [registry],
      collect() {
        this.reset();
        for (const c of s.counters()) this.set({ sequence: label(c.sequence), period: c.period ?? "" }, value(c));
      },
    });
  perCounter("idd_headroom_numbers", "Numbers reserved above what this worker claimed: claimable while MongoDB is down", (c) =>
    Number(c.headroom),
  );
  perCounter("idd_headroom_minutes", "Headroom at the recent rate, in minutes (-1 while nothing is being issued)", (c) =>
    c.ratePerSecond > 0.001 ? Number(c.headroom) / c.ratePerSecond / 60 : -1,
  );
  capacityGauges(registry, s.forecasts ?? (() => []), label);
  perCounter("idd_numbers_in_memory", "Unissued numbers in this worker's blocks", (c) => Number(c.inMemory));
  perCounter("idd_block_size", "Size of the next block this worker claims", (c) => c.blockSize);
  perCounter("idd_issue_rate_per_second", "Numbers a second this worker issued lately (decaying average)", (c) => c.ratePerSecond);
  return registry;
}

/**
 * The capacity forecasts (src/sequences/capacity.ts) as gauges per sequence and bound, read at
 * scrape time. One series per (sequence, bound): a sequence's current period only, so their number
 * is at most IDD_METRICS_MAX_SEQUENCES + 1 times the bounds a kind has (one; two for snowflake).
 * Sequences past the cap share the label `other`, which shows the worst of them (least left,
 * soonest to run out): an alert on `other` names no sequence but still fires.
 */
function capacityGauges(registry: Registry, forecasts: () => SequenceForecast[], label: (sequence: string) => string): void {
  const worst = () => {
    const out = new Map<string, { sequence: string; bound: string; left: number; ratio: number; seconds: number }>();
    for (const f of forecasts()) {
      const sequence = label(f.sequence);
      const x = f.forecast;
      const key = `${sequence}\u0000${x.bound}`;
      const seconds = x.exhaustionSeconds ?? Number.POSITIVE_INFINITY;
      const was = out.get(key);
      if (!was) out.set(key, { sequence, bound: x.bound, left: x.left, ratio: x.leftRatio, seconds });
      else
        Object.assign(was, {
          left: Math.min(was.left, x.left),
          ratio: Math.min(was.ratio, x.leftRatio),
          seconds: Math.min(was.seconds, seconds),
        });
    }
    return [...out.values()];
  };
  const gauge = (name: string, help: string, value: (w: ReturnType<typeof worst>[number]) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ["sequence", "bound"],
      registers: [registry],
      collect() {
        this.reset();
        for (const w of worst()) this.set({ sequence: w.sequence, bound: w.bound }, value(w));
      },
    });
  gauge(
    "idd_sequence_exhaustion_seconds",
    "Seconds until the sequence runs out at its current rate (bound: max-value, seq-width, obfuscated-domain, time-bits, worker-ids); +Inf while idle, when its period restarts first, or for worker ids with some free",
    (w) => w.seconds,
  );
  gauge(
    "idd_sequence_capacity_left_ratio",
    "Share of the sequence's capacity still left, 0 to 1: numbers up to its max value, its snowflake time field, its free worker ids",
    (w) => w.ratio,
  );
  gauge(
    "idd_sequence_capacity_left",
    "What is left before the sequence runs out, in the bound's unit: numbers, seconds (time-bits) or worker ids (worker-ids)",
    (w) => w.left,
  );
}
