/** What a chaos run is asked to do, and what it found. */

import type { GapCheck } from "../support/gaps.js";
import type { SequenceAudit } from "./audit-check.js";
import type { ChaosCluster } from "./cluster-services.js";
import type { HostileStats } from "./phases/hostile.js";
import type { OverloadStats } from "./phases/overload.js";
import type { FaultKind, ProfileName } from "./profiles.js";

export interface ChaosOptions {
  profile?: ProfileName;
  /** Fault kinds left out of the schedule (e.g. while `idd replay` does not exist yet). */
  skip?: readonly FaultKind[];
  /** Worker processes at the start (default 3). */
  workers?: number;
  /**
   * IdClients generating load (default 4), each with `loops` concurrent request loops (default 20).
   * Each loop asks for one sequence (loops are spread evenly over the sequences), so a partition
   * that is stuck during a fault holds up only its own sequences' loops, not the whole load.
   */
  clients?: number;
  loops?: number;
  sequences?: number;
  /** Client timeout of every request (default 15 s); a request still open 10 s later counts as hung. */
  requestTimeoutMs?: number;
  /** PRNG seed of the load and the victims (default random; printed). */
  seed?: number;
  /** The private stack (defaults: IDD_CHAOS_STACK_DIR or <repo>/.stack-chaos, IDD_CHAOS_PORT_BASE or port base 31000). */
  stackDir?: string;
  portBase?: number;
  /**
   * The cluster profile's services, for `profile: "cluster"` (test/chaos/cluster.test.ts hands in
   * those withCluster shares); without them the run starts them itself (cluster-services.ts).
   */
  cluster?: ChaosCluster;
  /** Multiplies the hostile phase's good and hostile requests. */
  hostileScale?: number;
  /** Progress lines (default: stderr). */
  log?: (line: string) => void;
}

export interface PhaseReport {
  name: string;
  kind: FaultKind | "warmup";
  requests: number;
  ok: number;
  numbers: number;
  /** Failed requests by error code (typed codes, plus HUNG / UNTYPED:<name> / WRONG_COUNT / NO_REPLY, which are failures of the run). */
  errors: Record<string, number>;
  /** Largest number of consecutive numbers skipped, over gaps that end in a number issued in this phase (counters only: not obfuscated values or snowflake ids). */
  largestGap: bigint;
  /** Latency of the successful requests sent in this phase (ms). */
  p50Ms: number | null;
  p99Ms: number | null;
  /** The longest any request sent in this phase waited for its end, numbers or an error (ms). */
  maxWaitMs: number | null;
  recovered: boolean;
  /** Checks of the phase itself that failed (overload, hostile): each fails the run. */
  failures: string[];
  overload?: OverloadStats;
  hostile?: HostileStats;
  /** From the fault's injection until every sequence answered again. */
  injectToOkMs: number | null;
  /**
   * From the injection until every sequence had one reply with numbers to a request sent after it
   * (the slowest sequence's), from the load and the probes; null when one never had.
   */
  firstOkMs: number | null;
  /** The longest time one sequence went without a reply with numbers, over intervals that overlap the phase. */
  stallMs: number | null;
  /** From the end of the heal step (replacement started, SIGCONT, service up, replay done) until every sequence answered. */
  healToOkMs: number | null;
  notes: string[];
}

export interface CounterReport {
  counter: string;
  numbers: number;
  largestGap: bigint;
  /** The G4 check against MongoDB's grants and reservations (absent when they could not be read, and for ungranted sequences). */
  gaps?: GapCheck;
  /** An obfuscated or snowflake sequence: its values are not serials from granted blocks, so no G4 check. */
  ungranted: boolean;
}

export interface ChaosResult {
  profile: ProfileName;
  seed: number;
  stackDir: string;
  workerLogDir: string;
  phases: PhaseReport[];
  /** Phases of the schedule that did not run because an earlier one did not recover. */
  notRun: string[];
  unrecovered: string[];
  /** Failed checks of phases (`<phase>: <what>`), e.g. an overload request never answered, a hostile one not dead-lettered. */
  phaseFailures: string[];
  requests: number;
  ok: number;
  /** Requests that ended with a typed error code (counted per code in the phases). */
  typedErrors: number;
  numbers: number;
  loadMs: number;
  requestsPerSecond: number;
  duplicates: string[];
  orderViolations: string[];
  /** Skipped numbers that neither a grant, a killed worker's blocks nor replay headroom explains (G4). */
  gapViolations: string[];
  /** `idd audit` per granted sequence: its mode, answered numbers and gap numbers per reason. */
  audits: Omit<SequenceAudit, "ranges">[];
  /** Where the audit and the run's history disagree (test/chaos/audit-check.ts); empty when they agree. */
  auditDisagreements: string[];
  /** The gapless sequence at the end: idd audit's line, and its settlements (sent, settled, failed by code). */
  gapless?: { audit: string; settlements: number; settled: number; codes: Record<string, number>; disagreements: string[] };
  /** Requests that neither got numbers nor a typed code: hung, untyped errors, wrong number count. */
  unaccounted: string[];
  unaccountedCount: number;
  /** Promise rejections nobody handled while the run was going (e.g. from the client library). */
  unhandledRejections: string[];
  /** Workers that exited without being told to. */
  unexpectedExits: string[];
  /** Workers that stayed alive but out of the consumer group (they serve nothing, silently). */
  zombies: string[];
  /** Worker log lines at level error or fatal, per worker (first few). */
  workerErrors: string[];
  counters: CounterReport[];
  checkMs: number;
  /** Why the run failed; empty when it passed. */
  failures: string[];
  passed: boolean;
}
