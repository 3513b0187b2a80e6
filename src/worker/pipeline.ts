/**
 * Replies behind the fetch (docs/design.md §5.13): a step's replies and forwards go out while its
 * partition's next records are fetched and answered, so a request waits for no other partition's
 * acknowledgements and a worker's fetch for no produce round trip. Per partition, steps are
 * committed in offset order, each once its replies and every earlier step's are acknowledged.
 *
 * When a step's delivery fails (Kafka refused or unreachable past the reply path's retries, the
 * dead-letter topic unwritable), nothing from that step on is committed and the partition is read
 * again from the step's first record (`rewind`): records delivered since are not sent again, the
 * others are answered again alike (G5; G6: their answers are recorded before they are sent).
 */
import type { Logger } from "pino";
import type { Instrumentation } from "../core/events.js";
import type { BatchContext } from "../transport/kafka/index.js";

/** Steps of one partition with replies out at once; past that, the partition's next step waits for them. */
export const MAX_STEPS_OUT = 4;

/** A step's records: its first record's offset and the offset after its last. */
export interface StepSpan {
  first: string;
  next: string;
}

/** What a step tells its pipeline: its span, what it is sending, and what to do once committed. */
export interface SentStep extends StepSpan {
  sending: Promise<void>[];
  /** Called once the step is committed (its metrics). */
  done: () => void;
}

/** One partition's steps, from what is committed on. */
export interface Lane {
  readonly partition: number;
  /** The offset before which every record was answered and committed (-1: none yet). */
  doneBefore: number;
  /** Offsets delivered since (not yet committed): not sent again when read again. */
  readonly delivered: Set<string>;
  /** Settles with whether the latest step and every one before it were delivered and committed. */
  tail: Promise<boolean>;
  /** Steps whose replies are out. */
  out: number;
}

export type PipelineContext = Pick<BatchContext, "commitBehind" | "rewind">;

export class ReplyPipeline {
  readonly #lanes = new Map<number, Lane>();
  readonly #log: Logger;
  readonly #events: Instrumentation;

  constructor(log: Logger, events: Instrumentation) {
    this.#log = log;
    this.#events = events;
  }

  /** `partition`'s lane, made at its first step since an assignment. */
  lane(partition: number): Lane {
    let lane = this.#lanes.get(partition);
    if (!lane) {
      lane = { partition, doneBefore: -1, delivered: new Set(), tail: Promise.resolve(true), out: 0 };
      this.#lanes.set(partition, lane);
    }
    return lane;
  }

  /** The partition left this worker: its steps still out commit nothing (the next owner reads from the commit). */
  forget(partition: number): void {
    this.#lanes.delete(partition);
  }

  /**
   * Queues a step of `lane` whose records were answered and whose replies are `sending`: resolves
   * once it is committed or given up. The caller waits on it only past MAX_STEPS_OUT steps out.
   */
  add(lane: Lane, ctx: PipelineContext, step: SentStep): Promise<void> {
    const before = lane.tail;
    lane.out++;
    lane.tail = (async () => {
      const results = await Promise.allSettled(step.sending);
      const ok = await before;
      lane.out--;
      if (!ok || this.#lanes.get(lane.partition) !== lane) return false; // an earlier step failed, or the partition left
      const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
      if (failed) {
        this.#rewind(lane, ctx, step, failed.reason);
        return false;
      }
      ctx.commitBehind(step.next);
      lane.doneBefore = Number(step.next);
      for (const o of lane.delivered) if (Number(o) < lane.doneBefore) lane.delivered.delete(o);
      try {
        step.done();
      } catch (e) {
        this.#log.error({ partition: lane.partition, err: (e as Error).message }, "a step's metrics failed");
      }
      return true;
    })();
    return lane.tail.then(() => undefined);
  }

  /** Resolves once every step out now is committed or given up (a consumer closing). */
  async settled(): Promise<void> {
    await Promise.all([...this.#lanes.values()].map((l) => l.tail));
  }

  /** The re-read starts a lane afresh from what is committed, still knowing what went out since. */
  #rewind(lane: Lane, ctx: PipelineContext, step: StepSpan, reason: unknown): void {
    this.#lanes.set(lane.partition, { ...lane, tail: Promise.resolve(true), out: 0 });
    this.#events.emit("worker.rewound", { partition: lane.partition, offset: step.first });
    this.#log.warn(
      { partition: lane.partition, offset: step.first, err: (reason as Error)?.message ?? String(reason) },
      "a step's replies could not be delivered: reading the partition again from its first record",
    );
    ctx.rewind(step.first);
  }
}
