/**
 * kafkajs's fetch loop without its lockstep (issue #30). kafkajs fetches from a broker, hands every
 * batch of the answer to its workers and fetches again only once all of them are handled: a record
 * that arrives on one partition waits for the slowest step of every other partition that broker
 * leads (a claim, a hook, a forward's produce). Here each broker's loop hands a batch over and
 * fetches again at once, for its partitions that have no batch being handled:
 *
 * - a partition has at most one batch in hand, so its records are still handled in offset order;
 *   it is paused in the consumer group's subscription state while it is (kafkajs leaves paused
 *   partitions out of fetch requests and answers), so it is not fetched again meanwhile, and
 *   resumed when the batch settles: its next fetch starts from the offsets the steps resolved;
 * - while a batch is in hand, the loop's fetches wait at most BUSY_WAIT_MS for data (kafkajs's
 *   maxWaitTime otherwise), so a partition resumed during a fetch is fetched again within that;
 *   when every partition of the broker is in hand, the loop waits for one to settle;
 * - a batch that fails stops its loop: the loop waits for its other batches, then throws what
 *   failed, as kafkajs's own fetcher does, and the runner retries or rejoins the group. Stopping
 *   (a rebalance, the consumer closing) also waits for the batches in hand, so no step of a
 *   partition runs after the member gave it up.
 *
 * Installed by kafkajs-modules.ts as a subclass of kafkajs's Runner that puts this manager where
 * kafkajs's own was; kafkajs's workers and worker queue still bound how many batches run at once
 * (`partitionsConsumedConcurrently`).
 */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** How long a fetch waits for data while some batch of its broker is in hand. */
export const BUSY_WAIT_MS = 5;

interface TopicPartitions {
  topic: string;
  partitions: number[];
}

/** What of kafkajs's ConsumerGroup this uses (2.2.4; kafkajs-modules.test.ts checks it is there). */
export interface KafkaGroup {
  maxWaitTime: number;
  subscriptionState: {
    active(): TopicPartitions[];
    pause(tps: TopicPartitions[]): void;
    resume(tps: TopicPartitions[]): void;
  };
  filterPartitionsByNode(nodeId: number, tps: TopicPartitions[]): TopicPartitions[];
}

interface KafkaBatch {
  topic: string;
  partition: number;
}

interface WorkerQueue {
  push(...batches: KafkaBatch[]): Promise<void>;
}

export interface PipelinedFetchOptions {
  group: KafkaGroup;
  getNodeIds(): number[];
  fetch(nodeId: number): Promise<KafkaBatch[]>;
  handler(batch: KafkaBatch): Promise<void>;
  concurrency: number;
}

const seq = require("kafkajs/src/utils/seq.js") as <T>(n: number, f: (i: number) => T) => T[];
const createWorker = require("kafkajs/src/consumer/worker.js") as (o: {
  handler: PipelinedFetchOptions["handler"];
  workerId: number;
}) => unknown;
const createWorkerQueue = require("kafkajs/src/consumer/workerQueue.js") as (o: { workers: unknown[] }) => WorkerQueue;
const { KafkaJSFetcherRebalanceError, KafkaJSNoBrokerAvailableError } = require("kafkajs/src/errors.js") as {
  KafkaJSFetcherRebalanceError: new () => Error;
  KafkaJSNoBrokerAvailableError: new () => Error;
};

/** One broker's loop: fetch, hand over, fetch again. */
class NodeLoop {
  readonly #nodeId: number;
  readonly #o: PipelinedFetchOptions;
  readonly #queue: WorkerQueue;
  /** Partitions with a batch in hand, of every loop of the manager (a leader may move): "topic|partition" → node. */
  readonly #handled: Map<string, number>;
  readonly #inHand = new Set<Promise<void>>();
  readonly #idleWait: number;
  #running = false;
  #done: Promise<void> | undefined;
  #failure: { error: unknown } | undefined;
  #wake: (() => void) | undefined;

  constructor(nodeId: number, o: PipelinedFetchOptions, queue: WorkerQueue, handled: Map<string, number>) {
    this.#nodeId = nodeId;
    this.#o = o;
    this.#queue = queue;
    this.#handled = handled;
    this.#idleWait = o.group.maxWaitTime;
  }

  /** Runs the loop until stopped or a batch fails (then throws that failure). */
  start(): Promise<void> {
    this.#done ??= this.#run();
    return this.#done;
  }

  async #run(): Promise<void> {
    this.#running = true;
    try {
      while (this.#running && !this.#failure) {
        if (this.#inHand.size > 0 && !this.#fetchable()) {
          await new Promise<void>((r) => {
            this.#wake = r;
          });
          continue;
        }
        this.#o.group.maxWaitTime = this.#inHand.size > 0 ? Math.min(BUSY_WAIT_MS, this.#idleWait) : this.#idleWait;
        const batches = await this.#o.fetch(this.#nodeId);
        if (!this.#running) break;
        for (const batch of batches) this.#handOver(batch);
      }
    } finally {
      this.#running = false;
      await Promise.all(this.#inHand);
    }
    if (this.#failure) throw this.#failure.error;
  }

  /** Whether some partition this broker leads for the member has no batch in hand. */
  #fetchable(): boolean {
    const { group } = this.#o;
    return group.filterPartitionsByNode(this.#nodeId, group.subscriptionState.active()).some((t) => t.partitions.length > 0);
  }

  #handOver(batch: KafkaBatch): void {
    const key = `${batch.topic}|${batch.partition}`;
    // In hand already (fetched before its pause, or by another broker's loop before a leader
    // moved): its records come again once that batch settles.
    if (this.#handled.has(key)) return;
    this.#handled.set(key, this.#nodeId);
    const tps = [{ topic: batch.topic, partitions: [batch.partition] }];
    const { subscriptionState } = this.#o.group;
    subscriptionState.pause(tps);
    const settled = this.#queue
      .push(batch)
      .catch((error: unknown) => {
        this.#failure ??= { error };
      })
      .finally(() => {
        subscriptionState.resume(tps);
        this.#handled.delete(key);
        this.#inHand.delete(settled);
        const wake = this.#wake;
        this.#wake = undefined;
        wake?.();
      });
    this.#inHand.add(settled);
  }

  /** Stops fetching; resolves once the batches in hand settled. */
  async stop(): Promise<void> {
    this.#running = false;
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
    await this.#done?.catch(() => {});
  }
}

/** kafkajs's FetchManager interface (start, stop, getFetchers), with one NodeLoop per broker. */
export function createPipelinedFetchManager(o: PipelinedFetchOptions) {
  const workers = seq(o.concurrency, (workerId) => createWorker({ handler: o.handler, workerId }));
  const queue = createWorkerQueue({ workers });
  let loops: NodeLoop[] = [];

  const createLoops = (): NodeLoop[] => {
    const nodeIds = o.getNodeIds();
    if (nodeIds.length === 0) throw new KafkaJSNoBrokerAvailableError();
    const handled = new Map<string, number>();
    // kafkajs's own check: brokers joined or left, so the loops are made again for the new set.
    const validated = {
      ...o,
      fetch: async (nodeId: number) => {
        const current = o.getNodeIds();
        if ((nodeIds.length !== current.length || nodeIds.some((n) => !current.includes(n))) && current.length !== 0)
          throw new KafkaJSFetcherRebalanceError();
        return o.fetch(nodeId);
      },
    };
    return nodeIds.map((nodeId) => new NodeLoop(nodeId, validated, queue, handled));
  };

  const stop = async () => {
    await Promise.all(loops.map((l) => l.stop()));
  };

  const start = async () => {
    for (;;) {
      loops = createLoops();
      try {
        await Promise.all(loops.map((l) => l.start()));
      } catch (error) {
        await stop();
        if (error instanceof KafkaJSFetcherRebalanceError) continue;
        throw error;
      }
      break;
    }
  };

  return { start, stop, getFetchers: () => loops };
}

/** What of kafkajs's Runner the subclass touches. */
interface KafkaRunner {
  consumerGroup: KafkaGroup & { getNodeIds(): number[] };
  fetchManager: unknown;
  fetch(nodeId: number): Promise<KafkaBatch[]>;
  handleBatch(batch: KafkaBatch): Promise<void>;
}
type RunnerClass = new (o: { concurrency?: number }) => KafkaRunner;

/** kafkajs's Runner with this module's fetch manager in place of its own. */
export function pipelinedRunner(Runner: RunnerClass): RunnerClass {
  return class PipelinedRunner extends Runner {
    constructor(o: { concurrency?: number }) {
      super(o);
      this.fetchManager = createPipelinedFetchManager({
        group: this.consumerGroup,
        getNodeIds: () => this.consumerGroup.getNodeIds(),
        fetch: (nodeId) => this.fetch(nodeId),
        handler: (batch) => this.handleBatch(batch),
        concurrency: o.concurrency ?? 1,
      });
    }
  };
}
