import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire, Module } from "node:module";
import { dirname, join, relative } from "node:path";
import { expect, test } from "vitest";
import { kafkajsHasIddModules, REPLACEMENTS, roundRobinFor } from "./kafkajs-modules.js";

const require = createRequire(import.meta.url);
const REPO = join(dirname(new URL(import.meta.url).pathname), "..", "..", "..");

/** Runs `fn` with `entries` in the require cache in place of what is there, then puts the cache back. */
function withCache<T>(entries: Record<string, NodeJS.Module | undefined>, fn: () => T): T {
  const saved = Object.fromEntries(Object.keys(entries).map((k) => [k, require.cache[k]]));
  const put = (es: Record<string, NodeJS.Module | undefined>) => {
    for (const [k, m] of Object.entries(es)) {
      if (m) require.cache[k] = m;
      else delete require.cache[k];
    }
  };
  put(entries);
  try {
    return fn();
  } finally {
    put(saved);
  }
}

/** A module whose exports record their calls and throw. */
function spyModule(path: string, calls: unknown[]): NodeJS.Module {
  const m = new Module(path);
  m.loaded = true;
  m.exports = (a: unknown) => {
    calls.push(a);
    throw new Error("called the spy");
  };
  return m;
}

test.each(REPLACEMENTS.map((r) => [r.path.slice(r.path.lastIndexOf("kafkajs/")), r] as const))(
  "kafkajs requires %s from that path",
  (_, { path, requiredBy }) => {
    const name = relative(dirname(requiredBy), path)
      .replace(/\.js$/, "")
      .replace(/\/index$/, "");
    const asRequired = name.startsWith(".") ? name : `./${name}`;
    expect(readFileSync(requiredBy, "utf8")).toContain(`require('${asRequired}')`);
    expect(require.resolve(asRequired, { paths: [dirname(requiredBy)] })).toBe(path);
  },
);

test("loading kafkajs through the seam puts ours in place of kafkajs's modules", () => {
  expect(kafkajsHasIddModules()).toBe(true);
  for (const { path } of REPLACEMENTS) {
    const fresh = withCache({ [path]: undefined }, () => require(path));
    expect(require.cache[path]?.exports).not.toBe(fresh);
  }
});

test("kafkajs's producer groups messages with what the require cache holds at that path", async () => {
  const [grouping] = REPLACEMENTS as [(typeof REPLACEMENTS)[number]];
  const calls: unknown[] = [];
  const createSendMessages = withCache(
    { [grouping.requiredBy]: undefined, [grouping.path]: spyModule(grouping.path, calls) },
    () => require(grouping.requiredBy) as (deps: unknown) => (o: unknown) => Promise<unknown>,
  );
  const send = createSendMessages({
    logger: { debug() {}, error() {} },
    cluster: {
      addMultipleTargetTopics: async () => {},
      refreshMetadataIfNecessary: async () => {},
      findTopicPartitionMetadata: () => [{ partitionId: 0 }],
      isConnected: () => true,
    },
    partitioner: () => 0,
    eosManager: {},
    retrier: (fn: (bail: (e: Error) => never) => Promise<unknown>) =>
      fn((e) => {
        throw e;
      }),
  });
  await expect(send({ acks: -1, topicMessages: [{ topic: "t", messages: [{ value: "v" }] }] })).rejects.toThrow("called the spy");
  expect(calls).toHaveLength(1);
});

test("kafkajs's produce request encodes records with what the require cache holds at that path", async () => {
  const [, record] = REPLACEMENTS as [unknown, (typeof REPLACEMENTS)[number]];
  const calls: unknown[] = [];
  const produceRequest = withCache(
    { [record.requiredBy]: undefined, [record.path]: spyModule(record.path, calls) },
    () => require(record.requiredBy) as (o: unknown) => { encode(): Promise<unknown> },
  );
  const request = produceRequest({
    acks: -1,
    timeout: 1000,
    topicData: [{ topic: "t", partitions: [{ partition: 0, messages: [{ value: "v" }] }] }],
  });
  await expect(request.encode()).rejects.toThrow("called the spy");
  expect(calls).toHaveLength(1);
});

test("kafkajs's record batch decoder decodes records with what the require cache holds at that path", async () => {
  const [, , decoder] = REPLACEMENTS as [unknown, unknown, (typeof REPLACEMENTS)[number]];
  const { RecordBatch } = require("kafkajs/src/protocol/recordBatch/v0/index.js");
  const Record = require("kafkajs/src/protocol/recordBatch/record/v0/index.js");
  const Decoder = require("kafkajs/src/protocol/decoder.js");
  const batch = await RecordBatch({ records: [Record({ value: "v" })] });
  const calls: unknown[] = [];
  const decodeBatch = withCache(
    { [decoder.requiredBy]: undefined, [decoder.path]: spyModule(decoder.path, calls) },
    () => require(decoder.requiredBy) as (d: unknown) => Promise<unknown>,
  );
  await expect(decodeBatch(new Decoder(batch.buffer))).rejects.toThrow("called the spy");
  expect(calls).toHaveLength(1);
});

test("kafkajs's request queue schedules no negative timeout (Node 23+ warns of each on stderr)", async () => {
  const RequestQueue = require("kafkajs/src/network/requestQueue/index.js") as new (
    o: object,
  ) => {
    scheduleCheckPendingRequests(): void;
    destroy(): void;
  };
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.name);
  process.on("warning", onWarning);
  const delays: number[] = [];
  const realSetTimeout = globalThis.setTimeout;
  globalThis.setTimeout = ((fn: () => void, ms?: number) => {
    delays.push(ms ?? 0);
    return realSetTimeout(fn, ms);
  }) as typeof setTimeout;
  try {
    const q = new RequestQueue({
      instrumentationEmitter: undefined,
      maxInFlightRequests: 1,
      requestTimeout: 1000,
      enforceRequestTimeout: false,
      clientId: "t",
      broker: "b",
      logger: {
        debug() {},
        warn() {},
        error() {},
        info() {},
        namespace() {
          return this;
        },
      },
    });
    q.scheduleCheckPendingRequests();
    await new Promise((r) => realSetTimeout(r, 20));
    q.destroy();
  } finally {
    globalThis.setTimeout = realSetTimeout;
    process.off("warning", onWarning);
  }
  expect(delays.length).toBeGreaterThan(0);
  expect(Math.min(...delays)).toBeGreaterThanOrEqual(0);
  expect(warnings).not.toContain("TimeoutNegativeWarning");
});

test("a consumer group's join and leave wait for what its consumer's assigner registered", async () => {
  type Group = { cluster: object; joinAndSync(): Promise<void>; leave(): Promise<void> };
  const { prototype } = require("kafkajs/src/consumer/consumerGroup.js") as { prototype: Group };
  const order: string[] = [];
  let release = () => {};
  const waited = new Promise<void>((r) => {
    release = r;
  });
  const cluster = {};
  const handle = {
    beforeJoin: async () => {
      order.push("wait");
      await waited;
      order.push("waited");
    },
  };
  roundRobinFor(handle)({ cluster, groupId: "g", logger: { info() {}, debug() {}, warn() {}, error() {} } as never } as never);
  // A group of that consumer, bare: kafkajs's own join and leave end (fail, for the join) at once,
  // which marks when they were reached.
  const group = Object.create(prototype) as Group;
  group.cluster = cluster;
  const calls = [
    group
      .joinAndSync()
      .catch(() => {})
      .finally(() => order.push("joined")),
    group
      .leave()
      .catch(() => {})
      .finally(() => order.push("left")),
  ];
  await new Promise((r) => setTimeout(r, 20));
  expect(order).toEqual(["wait", "wait"]); // kafkajs's own not reached while the wait lasts
  release();
  await Promise.all(calls);
  expect(order.slice(0, 4)).toEqual(["wait", "wait", "waited", "waited"]);
  expect(order.slice(4).sort()).toEqual(["joined", "left"]);
  expect((handle as { group?: object }).group).toBe(group);
});

test("a program that loads kafkajs before idd is told once what it loses; one that loads idd first is told nothing", () => {
  const run = (arg: string) =>
    spawnSync(process.execPath, ["--import", "tsx", join(REPO, "test/fixtures/kafkajs-first.ts"), arg], { cwd: REPO, encoding: "utf8" });
  const first = run("first");
  expect(first.status).toBe(0);
  const warned = first.stdout.split("\n").filter((l) => l.includes("kafkajs was loaded before idd"));
  expect(warned).toHaveLength(1);
  expect(JSON.parse(warned[0] as string).level).toBe(40);
  const after = run("after");
  expect(after.status).toBe(0);
  expect(after.stdout).not.toContain("kafkajs was loaded before idd");
});
