/**
 * The run's history: every request the load, the probes and the raw phases made, with the phase it
 * was sent in and how it ended, and the phases themselves. evaluate.ts checks it at the end.
 */
import { performance } from "node:perf_hooks";
import type { IdClient } from "../../src/client/id-client.js";
import { IddError } from "../../src/core/errors.js";
import type { Range } from "../../src/core/range.js";
import { sleep } from "../support/wait.js";
import type { HostileStats } from "./phases/hostile.js";
import type { OverloadStats } from "./phases/overload.js";
import type { RawPhaseContext } from "./phases/raw-traffic.js";
import type { FaultKind } from "./profiles.js";

/** How long past its own timeout a request may stay open before it counts as hung. */
const HANG_MARGIN_MS = 10_000;
/** The longest a single probe waits for its answer. */
const PROBE_TIMEOUT_MS = 20_000;

export interface RequestRecord {
  /** The phase the request was sent in. */
  phase: number;
  /** The phase its reply (or failure) arrived in, when later (a request in flight across a fault). */
  lastPhase?: number;
  sequence: string;
  count: number;
  probe: boolean;
  sentAt: number;
  receivedAt: number;
  period?: string | null;
  ranges?: Range[];
  code?: string;
}

export interface PhaseState {
  name: string;
  kind: FaultKind | "warmup";
  injectAt: number;
  healedAt?: number;
  recoveredAt?: number;
  recovered: boolean;
  notes: string[];
  failures: string[];
  overload?: OverloadStats;
  hostile?: HostileStats;
}

const rangeSize = (r: Range) => r.last - r.first + 1n;

export class RequestLog {
  readonly records: RequestRecord[] = [];
  readonly phases: PhaseState[] = [];
  /** One message per name of an error that had no idd code, for the report. */
  readonly untypedSamples = new Map<string, string>();

  /** The index of the phase in progress. */
  current(): number {
    return this.phases.length - 1;
  }

  /** A raw phase's request, in the phase in progress. */
  add(r: Parameters<RawPhaseContext["record"]>[0]): void {
    this.records.push({ phase: this.current(), probe: false, ...r });
  }

  /** One request, recorded with the phase that was active when it was sent. */
  async request(client: IdClient, sequence: string, count: number, probe: boolean, timeoutMs: number): Promise<RequestRecord> {
    const rec: RequestRecord = { phase: this.current(), sequence, count, probe, sentAt: performance.now(), receivedAt: 0 };
    let guard: NodeJS.Timeout | undefined;
    const hung = new Promise<"HUNG">((resolve) => {
      guard = setTimeout(() => resolve("HUNG"), timeoutMs + HANG_MARGIN_MS);
    });
    try {
      const r = await Promise.race([client.next(sequence, count, { timeoutMs }), hung]);
      rec.receivedAt = performance.now();
      if (r === "HUNG") rec.code = "HUNG";
      else {
        rec.period = r.period;
        rec.ranges = r.ranges;
        const got = r.ranges.reduce((s, x) => s + rangeSize(x), 0n);
        if (got !== BigInt(count)) rec.code = "WRONG_COUNT";
      }
    } catch (e) {
      rec.receivedAt = performance.now();
      if (e instanceof IddError) rec.code = e.code;
      else {
        const name = (e as Error)?.name ?? typeof e;
        rec.code = `UNTYPED:${name}`;
        if (!this.untypedSamples.has(name)) this.untypedSamples.set(name, String((e as Error)?.message ?? e).slice(0, 300));
      }
    } finally {
      clearTimeout(guard);
    }
    if (this.current() !== rec.phase) rec.lastPhase = this.current();
    this.records.push(rec);
    return rec;
  }

  /** Waits until every sequence has answered one probe with numbers. */
  async probeAll(client: IdClient, sequences: readonly string[], timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    const okAll = await Promise.all(
      sequences.map(async (s) => {
        while (Date.now() < deadline) {
          const left = deadline - Date.now();
          const r = await this.request(client, s, 1, true, Math.max(1000, Math.min(PROBE_TIMEOUT_MS, left)));
          if (r.code === undefined) return true;
          await sleep(250);
        }
        return false;
      }),
    );
    return okAll.every(Boolean);
  }

  /** Per sequence, how the load's and the probes' requests of the last `s` seconds ended (why a phase did not recover). */
  lastSeconds(s: number, sequences: readonly string[]): string {
    const since = performance.now() - s * 1000;
    const recent = this.records.filter((r) => r.receivedAt >= since);
    const rows = sequences.map((name) => {
      const load = recent.filter((r) => r.sequence === name && !r.probe);
      const probes = recent.filter((r) => r.sequence === name && r.probe);
      const codes = [...new Set(probes.flatMap((r) => (r.code ? [r.code] : [])))];
      return (
        `${name.slice(name.lastIndexOf("-") + 1)} load ${load.filter((r) => r.code === undefined).length}/${load.length} ok, ` +
        `probes ${probes.filter((r) => r.code === undefined).length}/${probes.length} ok${codes.length > 0 ? ` (${codes.join(" ")})` : ""}`
      );
    });
    return `in the last ${s} s: ${rows.join("; ")} (probes failing while the load of the same sequence is answered point at the probe client: see clients.log)`;
  }
}
