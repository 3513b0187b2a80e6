/** The consumer's offset commits: in order per partition, failures logged, close waits. No broker needed. */
import { expect, test } from "vitest";
import { CommitQueue, type PartitionOffset } from "./commit-queue.js";

/** A commit function whose calls stay pending until the test settles them. */
function pendingCommits() {
  const calls: { offsets: PartitionOffset[]; resolve(): void; reject(e: Error): void }[] = [];
  const commit = (offsets: PartitionOffset[]) =>
    new Promise<void>((resolve, reject) => {
      calls.push({ offsets, resolve, reject });
    });
  return { calls, commit };
}
const settle = () => new Promise<void>((r) => setImmediate(r));

test("commits of one partition go one after another, in order, the ones added meanwhile as the latest; other partitions do not wait", async () => {
  const queue = new CommitQueue();
  const { calls, commit } = pendingCommits();
  queue.add("requests", 0, "10", commit);
  queue.add("requests", 0, "20", commit);
  queue.add("requests", 1, "5", commit);
  queue.add("requests", 0, "30", commit);
  await settle();
  expect(calls.map((c) => c.offsets)).toEqual([
    [{ topic: "requests", partition: 0, offset: "10" }],
    [{ topic: "requests", partition: 1, offset: "5" }],
  ]);
  calls[0]?.resolve();
  await settle();
  // 20 and 30 were added while 10 was in flight: offsets are cumulative, so 30 alone is committed.
  expect(calls.map((c) => c.offsets[0]?.offset)).toEqual(["10", "5", "30"]);
  queue.add("requests", 0, "40", commit);
  calls[2]?.resolve();
  await settle();
  expect(calls.map((c) => c.offsets[0]?.offset)).toEqual(["10", "5", "30", "40"]);
  calls[3]?.resolve();
  calls[1]?.resolve();
  await queue.drained();
  queue.add("requests", 0, "50", commit);
  await settle();
  expect(calls.map((c) => c.offsets[0]?.offset)).toEqual(["10", "5", "30", "40", "50"]);
  calls[4]?.resolve();
  await queue.drained();
});

test("a commit that fails is logged, and the partition's next commit still goes", async () => {
  const logged: { fields: unknown; message: string }[] = [];
  const queue = new CommitQueue((fields, message) => logged.push({ fields, message }));
  const { calls, commit } = pendingCommits();
  queue.add("requests", 3, "7", commit);
  queue.add("requests", 3, "9", commit);
  await settle();
  calls[0]?.reject(new Error("coordinator moved"));
  await settle();
  expect(logged).toEqual([{ fields: { err: "coordinator moved", key: "requests/3", offset: "7" }, message: "committing offsets failed" }]);
  expect(calls.map((c) => c.offsets[0]?.offset)).toEqual(["7", "9"]);
  calls[1]?.resolve();
  await queue.drained();
});

test("drained() waits for every commit in flight, and resolves at once when none is", async () => {
  const queue = new CommitQueue();
  await queue.drained();
  const { calls, commit } = pendingCommits();
  queue.add("requests", 0, "1", commit);
  queue.add("requests", 1, "1", commit);
  queue.add("requests", 1, "2", commit);
  let drained = false;
  const waiting = queue.drained().then(() => {
    drained = true;
  });
  await settle();
  calls[0]?.resolve();
  calls[1]?.resolve();
  await settle();
  expect(drained).toBe(false); // partition 1's second commit is still in flight
  calls[2]?.resolve();
  await waiting;
  expect(drained).toBe(true);
});

test("with an interval, offsets added after a commit wait for it as one, and flush() sends them at once", async () => {
  const queue = new CommitQueue(undefined, 60_000);
  const { calls, commit } = pendingCommits();
  queue.add("requests", 0, "10", commit);
  await settle();
  calls[0]?.resolve(); // the first commit after a quiet spell goes at once
  await settle();
  queue.add("requests", 0, "20", commit);
  queue.add("requests", 0, "30", commit);
  queue.add("requests", 1, "5", commit); // another partition's first commit does not wait
  await settle();
  expect(calls.map((c) => c.offsets[0]?.offset)).toEqual(["10", "5"]);
  queue.flush(); // a rebalance starting
  await settle();
  expect(calls.map((c) => c.offsets[0]?.offset)).toEqual(["10", "5", "30"]);
  calls[1]?.resolve();
  calls[2]?.resolve();
  await queue.drained(); // closing: the lanes waiting on the interval end now
  expect(calls).toHaveLength(3);
});

test("with an interval, the waiting offset is committed when the interval ends", async () => {
  const queue = new CommitQueue(undefined, 20);
  const { calls, commit } = pendingCommits();
  queue.add("requests", 0, "1", commit);
  await settle();
  calls[0]?.resolve();
  await settle();
  queue.add("requests", 0, "2", commit);
  for (let i = 0; i < 200 && calls.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
  expect(calls.map((c) => c.offsets[0]?.offset)).toEqual(["1", "2"]);
  calls[1]?.resolve();
  await queue.drained();
});
