/**
 * kafkajs as idd runs it, from one explicit call: `loadKafkajs()` (made by `createKafka`, and by
 * every module of the seam that needs one of kafkajs's values, inside the function that needs it)
 * puts what follows in place, registers idd's codecs (codecs.ts), then loads kafkajs. Nothing in
 * src/ imports a kafkajs value, so kafkajs is never loaded before it.
 *
 * Seven of kafkajs's modules replaced (faster, or failing less, with the same records handed on),
 * without touching node_modules: kafkajs requires each of them once, when it is loaded, from the
 * one module that uses it, so `loadKafkajs` loads kafkajs's own first and puts ours in its place in Node's require
 * cache, and kafkajs then takes ours.
 *
 * - `src/producer/groupMessagesPerPartition.js`: a linear grouping (group-messages.ts).
 * - `src/protocol/recordBatch/record/v0/index.js`: a record encoded into one buffer of its size
 *   (record-encoder.ts), kafkajs's own for shapes ours leaves to it.
 * - `src/protocol/recordBatch/record/v0/decoder.js`: a fetched record decoded with numbers where
 *   kafkajs uses 64-bit values, and its headers object built once (record-decoder.ts), kafkajs's
 *   own for records ours leaves to it.
 * - `src/protocol/recordBatch/v0/decoder.js`: kafkajs's own batch decoder, wrapped so that a batch
 *   it cannot decode becomes one record saying so instead of failing the whole fetch
 *   (unreadable-batch.ts). Last: requiring kafkajs's loads the record decoder, already ours then.
 * - `src/protocol/requests/metadata/index.js`: kafkajs's own, with a response to a request for all
 *   topics kept when a partition of some topic has no leader, instead of failing the whole request
 *   (all-topics-metadata.ts).
 * - `src/consumer/fetcher.js`: a fetcher that fetches again the partitions whose batch is done
 *   while the others' batches are still handled, instead of waiting for all of them (fetcher.ts, with the
 *   group's fetch patched to leave the busy partitions out: `busyFetch`), and
 * - `src/consumer/workerQueue.js`: kafkajs's, with a promise per batch handed out (fetcher.ts).
 *
 * And one of kafkajs's classes patched: its consumer group spaces heartbeats by the wall clock
 * (`Date.now() >= lastRequest + interval`), so after the clock was stepped back it sent none until
 * the clock caught up with the last one's time (an hour, for a clock an hour back); the ownership
 * lease then stopped every step (design §5.17, issue #28). `lastRequest` is now kept on the
 * monotonic clock: the time since the last heartbeat is the time that passed.
 * test/transport/clock-step.test.ts steps the clock back under a real consumer.
 *
 * And its cluster's `addMultipleTargetTopics` drops, when a refresh fails on a topic that does not
 * exist, the earlier target topics that were deleted since, and refreshes again (gone-targets.ts):
 * kafkajs asks for every topic a producer ever sent to, so one client's reply topic deleted made
 * the next send to any new topic fail (kafkajs #1622).
 *
 * And its consumer group's join and leave wait first for what the consumer's owner registered
 * (`roundRobinFor`), and commits go through the group itself (`commitThrough`): kafkajs rejoins at
 * a rebalance, and leaves at a stop, as soon as its fetch loop sees them, while offset commits may
 * still be in flight, and its consumer drops commits once its stop began. Committed late or not at
 * all, those records were answered again by the next owner (issue #30).
 *
 * kafkajs-modules.test.ts fails when kafkajs stops requiring these modules from these paths, and
 * group-messages.test.ts, record-encoder.test.ts and record-decoder.test.ts when ours and
 * kafkajs's disagree; unreadable-batch.test.ts decodes real batches of every codec and broken ones.
 */
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import type { PartitionAssigner } from "kafkajs";
import { metadataForAllTopics } from "./all-topics-metadata.js";
import { registerCodecs } from "./codecs.js";
import type { PartitionOffset } from "./commit-queue.js";
import { busyFetch, createFetcher, createWorkerQueue } from "./fetcher.js";
import { dropGoneTargets } from "./gone-targets.js";
import { groupMessagesPerPartition } from "./group-messages.js";
import { type BatchContext, decodeRecord, type KafkaDecoder } from "./record-decoder.js";
import { encodeRecord, type RecordInput } from "./record-encoder.js";
import { readBatch } from "./unreadable-batch.js";

const require = createRequire(import.meta.url);

/** The part of kafkajs's ConsumerGroup (src/consumer/consumerGroup.js, 2.2.4) the group hooks use. */
interface GroupProto {
  cluster: object;
  joinAndSync(): Promise<void>;
  leave(): Promise<void>;
  commitOffsets(o: { topics: { topic: string; partitions: { partition: number; offset: string }[] }[] }): Promise<void>;
  /** kafkajs's retry with the consumer's `retry` settings (src/retry/index.js): non-retriable errors end it at once. */
  retrier<T>(fn: () => Promise<T>): Promise<T>;
  [JOIN_HOOKED]?: true;
}
const JOIN_HOOKED = Symbol.for("idd.kafkajs.join-hooked");

/** What one consumer's owner keeps of its kafkajs group (`roundRobinFor`). */
export interface GroupHandle {
  /** Waited for before each of the group's joins and its leave. */
  beforeJoin(): Promise<void>;
  /** The consumer's group, from its first join on (set by the hook). */
  group?: Pick<GroupProto, "commitOffsets" | "retrier">;
}
/** Per consumer, by the cluster kafkajs made for it, which its group keeps. */
const handles = new WeakMap<object, GroupHandle>();

/** A kafkajs module replaced: its path, the module that requires it, and what takes its place. */
interface Replacement {
  path: string;
  requiredBy: string;
  replace(original: (...a: never[]) => unknown): unknown;
}

export const REPLACEMENTS: Replacement[] = [
  {
    path: require.resolve("kafkajs/src/producer/groupMessagesPerPartition.js"),
    requiredBy: require.resolve("kafkajs/src/producer/sendMessages.js"),
    replace: () => groupMessagesPerPartition,
  },
  {
    path: require.resolve("kafkajs/src/protocol/recordBatch/record/v0/index.js"),
    requiredBy: require.resolve("kafkajs/src/protocol/requests/produce/v3/request.js"),
    replace: (original) => (r: RecordInput) => encodeRecord(r) ?? (original as (r: RecordInput) => unknown)(r),
  },
  {
    path: require.resolve("kafkajs/src/protocol/recordBatch/record/v0/decoder.js"),
    requiredBy: require.resolve("kafkajs/src/protocol/recordBatch/v0/decoder.js"),
    replace: (original) => (d: KafkaDecoder, ctx?: BatchContext) =>
      decodeRecord(d, ctx) ?? (original as (d: KafkaDecoder, ctx?: BatchContext) => unknown)(d, ctx),
  },
  {
    path: require.resolve("kafkajs/src/protocol/recordBatch/v0/decoder.js"),
    requiredBy: require.resolve("kafkajs/src/protocol/requests/fetch/v4/decodeMessages.js"),
    replace: (original) => readBatch(original as Parameters<typeof readBatch>[0]),
  },
  {
    path: require.resolve("kafkajs/src/consumer/fetcher.js"),
    requiredBy: require.resolve("kafkajs/src/consumer/fetchManager.js"),
    replace: () => createFetcher,
  },
  {
    path: require.resolve("kafkajs/src/consumer/workerQueue.js"),
    requiredBy: require.resolve("kafkajs/src/consumer/fetchManager.js"),
    replace: () => createWorkerQueue,
  },
  {
    path: require.resolve("kafkajs/src/protocol/requests/metadata/index.js"),
    requiredBy: require.resolve("kafkajs/src/protocol/requests/index.js"),
    replace: (original) => metadataForAllTopics(original as unknown as Parameters<typeof metadataForAllTopics>[0]),
  },
];

/**
 * Puts every replacement in place; false when kafkajs was loaded before (then it keeps its own
 * modules, which give the same results, only slower).
 */
function install(): boolean {
  const ours = (r: Replacement) => (require.cache[r.path] as { [REPLACED]?: boolean } | undefined)?.[REPLACED] === true;
  if (REPLACEMENTS.every(ours)) return true; // by another copy of this module (a test's)
  if (REPLACEMENTS.some((r) => require.cache[r.requiredBy])) return false;
  for (const r of REPLACEMENTS) {
    const original = require(r.path) as (...a: never[]) => unknown;
    const m = require.cache[r.path] as NodeJS.Module & { [REPLACED]?: boolean };
    m.exports = r.replace(original);
    m[REPLACED] = true;
  }
  return true;
}

/** Marks a module in the require cache whose exports are ours. */
const REPLACED = Symbol.for("idd.kafkajs-modules.replaced");

type Kafkajs = typeof import("kafkajs");
let loaded: { kafkajs: Kafkajs; ours: boolean } | undefined;

/**
 * kafkajs, with idd's modules, patches and codecs in place (the first call puts them there). When
 * kafkajs was loaded before the first call (a program that imported it first), it keeps its own
 * seven modules: `kafkajsHasIddModules()` is false then, and a batch kafkajs cannot decode fails its
 * whole fetch again (createKafka warns).
 */
export function loadKafkajs(): Kafkajs {
  if (!loaded) {
    const ours = install();
    heartbeatAfterClockSteps();
    clampThrottleCheck();
    hookJoin();
    dropGoneTargets((require("kafkajs/src/cluster/index.js") as { prototype: Parameters<typeof dropGoneTargets>[0] }).prototype);
    busyFetch((require("kafkajs/src/consumer/consumerGroup.js") as { prototype: Parameters<typeof busyFetch>[0] }).prototype);
    const kafkajs = require("kafkajs") as Kafkajs;
    registerCodecs(kafkajs);
    loaded = { kafkajs, ours };
  }
  return loaded.kafkajs;
}

/** Whether kafkajs runs idd's seven modules (loads it first, through `loadKafkajs`). */
export function kafkajsHasIddModules(): boolean {
  loadKafkajs();
  return loaded?.ours === true;
}

/**
 * The consumer group's last heartbeat time (Unix ms, as kafkajs sets and compares it with
 * `Date.now()`), kept as a monotonic reading: read back, it is now less the time that really passed
 * since, so a wall clock stepped either way leaves the next heartbeat due one interval after the last.
 */
function heartbeatAfterClockSteps(): void {
  const ConsumerGroup = require("kafkajs/src/consumer/consumerGroup.js") as { prototype: object };
  const mono = Symbol.for("idd.kafkajs.lastRequestMonotonic");
  if (Object.getOwnPropertyDescriptor(ConsumerGroup.prototype, "lastRequest")) return; // another copy of this module did
  Object.defineProperty(ConsumerGroup.prototype, "lastRequest", {
    get(this: { [mono]?: number }) {
      return Date.now() - (performance.now() - (this[mono] ?? 0));
    },
    set(this: { [mono]?: number }, at: number) {
      this[mono] = performance.now() - (Date.now() - at);
    },
    configurable: true,
  });
}

/**
 * kafkajs's request queue schedules its check of pending requests `throttledUntil - now` ms ahead,
 * and throttledUntil starts at -1: a delay of minus the epoch, which Node clamps to 1 ms and, from
 * Node 23 on, reports on stderr (TimeoutNegativeWarning) from every worker. kafkajs's method
 * (`src/network/requestQueue/index.js`, 2.2.4) with the delay never below 0; patched on its class,
 * so it holds whenever kafkajs was loaded.
 */
function clampThrottleCheck(): void {
  type Queue = {
    throttledUntil: number;
    throttleCheckTimeoutId: NodeJS.Timeout | null;
    pending: unknown[];
    checkPendingRequests(): void;
    scheduleCheckPendingRequests(): void;
    [CLAMPED]?: true;
  };
  const proto = (require("kafkajs/src/network/requestQueue/index.js") as { prototype: Queue }).prototype;
  if (proto[CLAMPED]) return;
  proto.scheduleCheckPendingRequests = function (this: Queue) {
    if (this.throttleCheckTimeoutId) return;
    let after = this.throttledUntil - Date.now();
    if (this.pending.length > 0 && after <= 0) after = CHECK_PENDING_MS;
    this.throttleCheckTimeoutId = setTimeout(
      () => {
        this.throttleCheckTimeoutId = null;
        this.checkPendingRequests();
      },
      Math.max(0, after),
    );
  };
  proto[CLAMPED] = true;
}
/** kafkajs's CHECK_PENDING_REQUESTS_INTERVAL. */
const CHECK_PENDING_MS = 10;
const CLAMPED = Symbol.for("idd.kafkajs.throttle-check-clamped");

/**
 * kafkajs's round-robin assigner (its default), for one consumer (`consumer({ partitionAssigners })`)
 * whose group `handle` follows: the group waits for `handle.beforeJoin` before each join and its
 * leave, and `handle.group` is the group once it joined. kafkajs hands an assigner factory the
 * cluster it made for that one consumer, and its group keeps the same: the only handle on a
 * consumer's group that kafkajs gives out.
 */
export function roundRobinFor(handle: GroupHandle): PartitionAssigner {
  const { roundRobin } = loadKafkajs().PartitionAssigners;
  return (args) => {
    handles.set(args.cluster, handle);
    return roundRobin(args);
  };
}

/**
 * Commits `offsets` through `group` itself, retried as kafkajs's consumer retries a commit (a
 * coordinator moving, a broker restarting). kafkajs's `consumer.commitOffsets` does nothing, and
 * says so only at debug, once its consumer began to stop: the last steps' offsets, committed while
 * it stops and before it leaves, were dropped, and the next owners answered those records again.
 */
export function commitThrough(group: NonNullable<GroupHandle["group"]>, offsets: PartitionOffset[]): Promise<void> {
  const topics = offsets.map((o) => ({ topic: o.topic, partitions: [{ partition: o.partition, offset: o.offset }] }));
  return group.retrier(() => group.commitOffsets({ topics }));
}

function hookJoin(): void {
  const proto = (require("kafkajs/src/consumer/consumerGroup.js") as { prototype: GroupProto }).prototype;
  if (proto[JOIN_HOOKED]) return;
  const { joinAndSync, leave } = proto;
  const before = async (group: GroupProto) => {
    const handle = handles.get(group.cluster);
    if (!handle) return;
    handle.group = group;
    await handle.beforeJoin();
  };
  proto.joinAndSync = async function (this: GroupProto) {
    await before(this);
    return joinAndSync.call(this);
  };
  proto.leave = async function (this: GroupProto) {
    await before(this);
    return leave.call(this);
  };
  proto[JOIN_HOOKED] = true;
}
