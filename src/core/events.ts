/**
 * Instrumentation events: what a worker's parts report as they work, one name each (as kafkajs
 * does for its own). Metrics (metrics.ts) and readiness (readiness.ts) are listeners; so can tests
 * and the chaos harness be, instead of reading log text. Events are emitted per step, claim or
 * state change, never per number: listeners add no per-number cost.
 */
import { EventEmitter } from "node:events";

export interface EventPayloads {
  /**
   * A step of a fetched batch was answered, delivered and committed; `phases` splits its time:
   * parse (records to requests, reply addresses checked), issue (routing, issuing, recording) and
   * deliver (replies, forwards and dead letters acknowledged). `waitsMs`: per record, how long it
   * was in Kafka before its step began, by who sent it (a client, or a worker forwarding it home).
   */
  "worker.step": {
    partition: number;
    records: number;
    ms: number;
    lag: number;
    phases: { parse: number; issue: number; deliver: number };
    waitsMs: { client: number[]; worker: number[] };
  };
  /** The consumer group gave this worker its partitions (and took `lost`). */
  "worker.assigned": { partitions: number[]; lost: number[]; droppedNumbers: bigint };
  /** The consumer is running (joined) or stopped (crashed, closing). */
  "worker.consumer": { running: boolean };
  /** A step's answers, counted per sequence and status (`OK` or the error code). */
  "dispenser.answered": { partition: number; counts: AnswerCount[]; deduped: number };
  /**
   * A step's requests refused before the dispenser saw them (unreadable, invalid, no usable reply
   * address) or whose reply could not be delivered, per sequence (as the request named it: user
   * data, not necessarily a valid name) and code.
   */
  "worker.refused": { partition: number; counts: { sequence: string; code: string; requests: number }[] };
  /** A fetched batch could not be decoded and was dead-lettered whole: its codec and how many records it held. */
  "worker.unreadable": { partition: number; codec: string; records: number };
  /** A step's requests whose sequence lives on another partition were forwarded there (docs/wire-contract.md: Routing). */
  "worker.forwarded": { partition: number; requests: number };
  /** Requests written to the dead-letter topic (no deliverable reply address, unreadable, a reply the broker refused), by code. */
  "worker.dead_lettered": { partition: number; counts: { code: string; requests: number }[] };
  /** The request topic's partition count grew: sequences were re-homed and this worker's blocks dropped. */
  "worker.partitions": { partitions: number; was: number; droppedNumbers: bigint };
  /** This worker took a partition under a new gen (a new owner, or one taking it back; src/ownership/). */
  "ownership.taken": { partition: number };
  /** A block of numbers was claimed from Redis: `first`..`last`, `size` numbers. */
  "allocation.claimed": { sequence: string; period: string | null; size: number; first: bigint; last: bigint };
  /** A counter's reservation was raised (MongoDB, then Redis). */
  "allocation.raised": { sequence: string; period: string | null; max: bigint };
  /** A snowflake sequence's worker id: leased (the id), or lost or given back (null). */
  "snowflake.lease": { sequence: string; workerId: number | null };
  /** A snowflake take was refused with CLOCK_BACKWARDS. */
  "snowflake.clock_backwards": { sequence: string };
  /** A gapless sweep voided a counter's numbers pending past their confirm timeout (reason `expired`). */
  "gapless.expired": { sequence: string; period: string | null; numbers: number };
  /**
   * Each gapless sequence's numbers per state, counted by the periodic sweep (not per request), on
   * the worker that owns request partition 0; `counting: false` (no counts) when this worker stops
   * being that one.
   */
  "gapless.counts": { counts: { sequence: string; state: "pending" | "confirmed" | "voided"; numbers: number }[]; counting?: false };
  /** A dependency's breaker opened (calls fail fast) or closed. */
  "breaker.state": { what: string; open: boolean };
}

export interface AnswerCount {
  sequence: string;
  status: string;
  requests: number;
  /** Numbers issued (answers sent again from the dedupe store not included: those are in `deduped`). */
  numbers: number;
}

export type EventName = keyof EventPayloads;

export class Instrumentation {
  readonly #emitter = new EventEmitter();

  constructor() {
    this.#emitter.setMaxListeners(100);
  }

  on<K extends EventName>(name: K, listener: (payload: EventPayloads[K]) => void): () => void {
    this.#emitter.on(name, listener);
    return () => this.#emitter.off(name, listener);
  }

  /** Listeners run synchronously; one that throws is not allowed to break the emitter's caller. */
  emit<K extends EventName>(name: K, payload: EventPayloads[K]): void {
    if (this.#emitter.listenerCount(name) === 0) return;
    try {
      this.#emitter.emit(name, payload);
    } catch {
      // a listener's bug; instrumentation never fails the work it reports on
    }
  }
}
