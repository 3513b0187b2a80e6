/**
 * kafkajs's fetcher (`src/consumer/fetcher.js`, 2.2.4), pipelined per partition. kafkajs's fetcher
 * fetches every partition a broker leads for the consumer, hands the batches to its workers, and fetches
 * again only once every one of them was handled: a record on an idle partition waited for the
 * steps of the worker's other partitions (a forwarded request twice, once on each worker: issue #30).
 *
 * Here the next fetch is made as soon as the last one's batches are handed over. Partitions with
 * a batch queued or being handled are left out of it (the group's fetch reads them: `busyFetch`),
 * so a partition is never handed two batches at once, and its next fetch starts from the offset
 * its handler resolved, as in kafkajs. While any batch is being handled a fetch waits at most
 * `BUSY_WAIT_MS` for records: a partition whose batch ends is fetched again within that time, not
 * after a long poll of the others. A handler's failure ends the fetcher as in kafkajs, once the
 * batches being handled are done.
 */
import { EventEmitter } from "node:events";

/** How long a fetch waits for records while some partition's batch is being handled. */
const BUSY_WAIT_MS = 5;

interface TopicPartition {
  topic: string;
  partition: number;
}

/** What kafkajs's fetch manager gives its fetchers (src/consumer/fetchManager.js, 2.2.4). */
export interface FetcherOptions<T extends TopicPartition> {
  nodeId: number;
  workerQueue: WorkerQueue<T>;
  /** Shared by one consumer's fetchers: the partitions with a batch handed out, and by which fetcher. */
  partitionAssignments: Map<string, number>;
  fetch(nodeId: number): Promise<T[]>;
  logger: { namespace(name: string): { info(message: string, extra?: object): void } };
}

const partitionKey = (topic: string, partition: number) => `${topic}|${partition}`;

/** Set for the span of a fetch call (read synchronously by the group's fetch, which kafkajs calls without a wait). */
let handedOff: ReadonlyMap<string, number> | undefined;

/** A worker of kafkajs's (src/consumer/worker.js, 2.2.4): takes queued batches from `next` until none is left. */
interface Worker<T> {
  run(o: { next: () => { batch: T; resolve(): void; reject(e: unknown): void } | undefined }): Promise<void>;
}

export interface WorkerQueue<T> {
  /** kafkajs's: resolves once every batch is handled, rejects with the first failure. */
  push(...batches: T[]): Promise<void>;
  /** One promise per batch, settled when that batch is handled. */
  pushEach(...batches: T[]): Promise<void>[];
}

/**
 * kafkajs's worker queue (src/consumer/workerQueue.js, 2.2.4) with a promise per batch. Batches
 * must be queued in one call per fetch: a worker whose loop just ended is busy until a microtask
 * later (kafkajs's sharedPromiseTo), so a second call in the same tick finds it busy and its batch
 * waits for a worker that is handling a long one.
 */
export function createWorkerQueue<T>({ workers }: { workers: Worker<T>[] }): WorkerQueue<T> {
  const queue: { batch: T; resolve(): void; reject(e: unknown): void }[] = [];
  const pushEach = (...batches: T[]) => {
    const promises = batches.map((batch) => new Promise<void>((resolve, reject) => queue.push({ batch, resolve, reject })));
    for (const w of workers) void w.run({ next: () => queue.shift() });
    return promises;
  };
  const push = async (...batches: T[]) => {
    const rejected = (await Promise.allSettled(pushEach(...batches))).find((r) => r.status === "rejected");
    if (rejected) throw (rejected as PromiseRejectedResult).reason;
  };
  return { push, pushEach };
}

export function createFetcher<T extends TopicPartition>(o: FetcherOptions<T>) {
  const { nodeId, workerQueue, partitionAssignments } = o;
  const logger = o.logger.namespace(`Fetcher ${nodeId}`);
  const emitter = new EventEmitter();
  let isRunning = false;

  const elsewhere = (b: T) => {
    const by = partitionAssignments.get(partitionKey(b.topic, b.partition));
    if (by === undefined || by === nodeId) return false;
    logger.info("Filtering out batch due to partition already being processed by another fetcher", {
      topic: b.topic,
      partition: b.partition,
      assignedFetcher: by,
      fetcher: nodeId,
    });
    return true;
  };

  const start = async () => {
    if (isRunning) return;
    isRunning = true;
    const handling = new Set<Promise<void>>();
    let failure: { error: unknown } | undefined;
    try {
      while (isRunning && !failure) {
        handedOff = partitionAssignments;
        let fetched: Promise<T[]>;
        try {
          fetched = o.fetch(nodeId);
        } finally {
          handedOff = undefined;
        }
        const batches = (await fetched).filter((b) => !elsewhere(b));
        if (!isRunning) break;
        const keys = batches.map((b) => partitionKey(b.topic, b.partition));
        for (const key of keys) partitionAssignments.set(key, nodeId);
        workerQueue.pushEach(...batches).forEach((pushed, i) => {
          const handled: Promise<void> = pushed
            .catch((error: unknown) => {
              failure ??= { error };
            })
            .finally(() => {
              partitionAssignments.delete(keys[i] as string);
              handling.delete(handled);
            });
          handling.add(handled);
        });
      }
    } catch (error) {
      failure ??= { error };
    }
    await Promise.all(handling);
    isRunning = false;
    emitter.emit("end");
    if (failure) throw failure.error;
  };

  const stop = async () => {
    if (!isRunning) return;
    isRunning = false;
    await new Promise<void>((resolve) => emitter.once("end", () => resolve()));
  };

  return { start, stop, getWorkerQueue: () => workerQueue };
}

/** The part of kafkajs's ConsumerGroup (src/consumer/consumerGroup.js, 2.2.4) the fetch reads. */
interface GroupFetch {
  maxWaitTime: number;
  fetch(nodeId: number): Promise<unknown[]>;
  getActiveTopicPartitions(): Record<string, Set<number>>;
  [BUSY]?: ReadonlyMap<string, number>;
}
const BUSY = Symbol.for("idd.kafkajs.busy-partitions");
const PATCHED = Symbol.for("idd.kafkajs.busy-fetch");

/**
 * The group's fetch, called by one of our fetchers, leaves out the partitions with a batch handed
 * out, and waits at most BUSY_WAIT_MS for records while there are some (kafkajs's own code reads
 * `getActiveTopicPartitions()` and `maxWaitTime`, so those two are what a group answers from then on).
 */
export function busyFetch(proto: GroupFetch & { [PATCHED]?: true }): void {
  if (proto[PATCHED]) return;
  proto[PATCHED] = true;
  const fetch = proto.fetch;
  const active = proto.getActiveTopicPartitions;
  proto.fetch = function (this: GroupFetch, nodeId: number) {
    const busy = handedOff; // set by one of our fetchers calling now
    if (busy && !Object.hasOwn(this, BUSY)) {
      const longest = this.maxWaitTime;
      Object.defineProperty(this, "maxWaitTime", {
        get: () => ((this[BUSY]?.size ?? 0) > 0 ? Math.min(longest, BUSY_WAIT_MS) : longest),
        set: () => {},
        configurable: true,
      });
      this.getActiveTopicPartitions = function (this: GroupFetch) {
        const partitions = active.call(this);
        for (const key of this[BUSY]?.keys() ?? []) {
          const at = key.lastIndexOf("|");
          partitions[key.slice(0, at)]?.delete(Number(key.slice(at + 1)));
        }
        return partitions;
      };
    }
    if (busy) this[BUSY] = busy;
    return fetch.call(this, nodeId);
  };
}
