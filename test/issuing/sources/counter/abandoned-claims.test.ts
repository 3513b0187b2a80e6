/**
 * Abandoned claims on a real Redis and MongoDB (design G4): a strict claim whose claimant stopped
 * between the claim in Redis (the real claimBlock script, as a Counter sends it) and its grant's
 * write is recorded by the counter's next claim, exactly (block, claimant, gen, claim id); a grant
 * written after all and the abandoned record exclude each other by `_id`, whichever comes first;
 * relaxed claims are never recorded as abandoned.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { Scripts } from "../../../../src/redis/scripts.js";
import { defineSequence, type SequenceDef } from "../../../../src/sequences/definition.js";
import { Store } from "../../../../src/storage/store.js";
import { TEST_GEN, TestAllocators } from "../../../support/allocator.js";
import { MongoQueries } from "../../../support/mongo-queries.js";
import { numbers } from "../../../support/numbers.js";
import { scriptClient } from "../../../support/redis.js";

const services = inject("services");
const redis = scriptClient(services.redisUrl);
const scripts = new Scripts(redis);
const dbName = `test_${randomUUID().replaceAll("-", "")}`;
const store = new Store(services.mongodbUrl, { dbName });
const queries = new MongoQueries(services.mongodbUrl, dbName);
const allocators = new TestAllocators(() => ({ redis, store }));

beforeAll(() => store.ensureIndexes());
afterAll(async () => {
  await allocators.close();
  await queries.dropDatabase();
  await store.close();
  redis.disconnect();
});

async function sequence(prefix: string, grantLog: "strict" | "relaxed"): Promise<SequenceDef> {
  const def = defineSequence({ name: `${prefix}-${randomUUID().slice(0, 8)}`, grantLog }, new Date());
  await store.createSequence(def);
  return def;
}

/** What a Counter of `worker` sends to Redis for its next block, and then stops (killed before its grant's write). */
const claimAndStop = (def: SequenceDef, worker: string, claimId: string, writeAhead: boolean, gen = TEST_GEN) =>
  scripts.claimBlock({
    sequence: def.name,
    period: null,
    size: 30,
    epoch: "1",
    claimId,
    gen,
    adopt: false,
    worker,
    writeAhead,
    atMs: Date.now(),
  });

test("a strict claim its worker never recorded is recorded by the next claim, exactly, and explains its numbers", async () => {
  const def = await sequence("abandon", "strict");
  const a = allocators.worker("w-a");
  const issuedA = numbers(await a.counter(def, null).take(5)); // its first block, granted before use
  const lost = await claimAndStop(def, "w-a", "claim-of-a", true);
  expect(lost.previous.map((p) => p.worker)).toEqual(["w-a"]); // its first block's claim, whose grant exists
  const b = allocators.worker("w-b");
  b.gen = TEST_GEN + 1; // a newer owner of the partition
  const issuedB = numbers(await b.counter(def, null).take(5));
  expect(issuedB[0]).toBe(lost.last + 1n);

  const records = await queries.grantsOf(def.name, null);
  expect(records.map((g) => [g.first, g.last, g.worker, g.abandoned?.by ?? null])).toEqual([
    [issuedA[0], expect.any(BigInt), "w-a", null],
    [lost.first, lost.last, "w-a", "w-b"],
    [issuedB[0], expect.any(BigInt), "w-b", null],
  ]);
  const record = records[1];
  expect(record).toMatchObject({ claim: "claim-of-a", epoch: 1, abandoned: { gen: TEST_GEN, by: "w-b" } });
  // The first block's grant was not touched: its abandoned record (sent by nobody here) would have been refused.
  expect(records[0]?.abandoned).toBeUndefined();

  // The claimant's grant arriving late is refused and tells it so: it never uses the block.
  const late = {
    claim: "claim-of-a",
    sequence: def.name,
    period: null,
    first: lost.first,
    last: lost.last,
    epoch: 1,
    worker: "w-a",
    at: new Date(),
  };
  expect(await store.writeGrant(late)).toBe("abandoned");
  // The same record sent again (another claimer, a batched copy) changes nothing either.
  await store.appendGrants([{ ...late, abandoned: { gen: 1, by: "w-c", at: new Date() } }]);
  expect((await queries.grantsOf(def.name, null))[1]).toEqual(record);
});

test("a grant written after all refuses the abandoned record; a claim whose answer was lost still reports its previous claim", async () => {
  const def = await sequence("race", "strict");
  const a = allocators.worker("w-a2");
  await a.counter(def, null).take(1);
  // The claimant was only slow: its grant reaches MongoDB before the next claimer's record.
  const slow = await claimAndStop(def, "w-a2", "slow-claim", true);
  const grant = {
    claim: "slow-claim",
    sequence: def.name,
    period: null,
    first: slow.first,
    last: slow.last,
    epoch: 1,
    worker: "w-a2",
    at: new Date(),
  };
  expect(await store.writeGrant(grant)).toBe("written");
  expect(await store.writeGrant(grant)).toBe("written"); // an earlier try that landed: its own grant, usable
  // The next claim's first answer is lost; its retry (same claim id) gets the same block and previous claim.
  const b = allocators.worker("w-b2");
  b.gen = TEST_GEN + 1;
  const first = await claimAndStop(def, "w-b2", "retried", true, b.gen);
  const again = await claimAndStop(def, "w-b2", "retried", true, b.gen);
  expect(again).toEqual(first);
  expect(again.previous[0]).toMatchObject({ id: "slow-claim", first: slow.first, last: slow.last, worker: "w-a2", writeAhead: true });
  // A counter's next claim sends the abandoned record of "retried" (killed too), refused for nothing.
  await b.counter(def, null).take(1);
  const records = await queries.grantsOf(def.name, null);
  expect(records.filter((g) => g.abandoned).map((g) => g.claim)).toEqual(["retried"]);
  expect(records.find((g) => g.claim === "slow-claim")?.abandoned).toBeUndefined();
});

test("two claims abandoned in a row, by two takeovers, are both recorded by the next claim", async () => {
  const def = await sequence("twice", "strict");
  const a = allocators.worker("w-t1");
  const issuedA = numbers(await a.counter(def, null).take(2));
  const lostA = await claimAndStop(def, "w-t1", "lost-1", true);
  const lostB = await claimAndStop(def, "w-t2", "lost-2", true, TEST_GEN + 1); // the next owner, killed as well
  expect(lostB.previous.map((p) => p.id)).toEqual(["lost-1", expect.any(String)]);
  const c = allocators.worker("w-t3");
  c.gen = TEST_GEN + 2;
  const issuedC = numbers(await c.counter(def, null).take(2));
  expect(issuedC[0]).toBe(lostB.last + 1n);
  const records = await queries.grantsOf(def.name, null);
  expect(records.map((g) => [g.first, g.last, g.worker, g.abandoned?.by ?? null])).toEqual([
    [issuedA[0], expect.any(BigInt), "w-t1", null],
    [lostA.first, lostA.last, "w-t1", "w-t3"],
    [lostB.first, lostB.last, "w-t2", "w-t3"],
    [issuedC[0], expect.any(BigInt), "w-t3", null],
  ]);
});

test("relaxed claims are never recorded as abandoned: their numbers may have been answered before their batch", async () => {
  const def = await sequence("relaxed", "relaxed");
  const a = allocators.worker("w-r");
  await a.counter(def, null).take(1);
  await a.grants.flush();
  const lost = await claimAndStop(def, "w-r", "relaxed-claim", false);
  const b = allocators.worker("w-r2");
  b.gen = TEST_GEN + 1;
  await b.counter(def, null).take(1);
  await b.grants.flush();
  const records = await queries.grantsOf(def.name, null);
  expect(records.some((g) => g.abandoned)).toBe(false);
  expect(records.some((g) => g.first <= lost.last && g.last >= lost.first)).toBe(false); // unexplained, as the design says
});

test("a strict grant MongoDB refuses is UNAVAILABLE naming MongoDB, and the next take gets the same block at once", async () => {
  const def = await sequence("refused", "strict");
  let refuse = true;
  const writeGrant: Store["writeGrant"] = (grant, abandoned) =>
    refuse ? Promise.reject(new Error("waiting for replication timed out")) : store.writeGrant(grant, abandoned);
  // MongoDB answering with an error, as a write concern that cannot be met does: not a lost connection.
  const refusing = new Proxy(store, {
    get: (target, key) => {
      if (key === "writeGrant") return writeGrant;
      const v = Reflect.get(target, key);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  const own = new TestAllocators(() => ({ redis, store: refusing }));
  try {
    const counter = own.worker("w-refused").counter(def, null);
    await expect(counter.take(3)).rejects.toMatchObject({
      code: "UNAVAILABLE",
      message: expect.stringMatching(/MongoDB refused the grant/),
    });
    refuse = false;
    // Not failed fast as "Redis unreachable": the retry takes the same block and writes its grant once.
    const issued = numbers(await counter.take(3));
    const records = await queries.grantsOf(def.name, null);
    expect(records.map((g) => [g.first, g.abandoned ?? null])).toEqual([[issued[0], null]]);
  } finally {
    await own.close();
  }
});

test("a strict block whose grant MongoDB refused and that is never claimed again is released: the audit sees no death", async () => {
  const def = defineSequence({ name: `unretried-${randomUUID().slice(0, 8)}`, audit: true }, new Date());
  await store.createSequence(def);
  const refusing = new Proxy(store, {
    get: (target, key) => {
      if (key === "writeGrant") return () => Promise.reject(new Error("waiting for replication timed out"));
      const v = Reflect.get(target, key);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  const own = new TestAllocators(() => ({ redis, store: refusing }));
  await expect(own.worker("w-unretried").counter(def, null).take(3)).rejects.toMatchObject({ code: "UNAVAILABLE" });
  await own.close(); // stopped before a retry: the block's grant is in the batched log, unused
  const [grant] = await queries.grantsOf(def.name, null);
  const released = [];
  for await (const r of store.releasesInOrder(def.name, null)) released.push([r.first, r.last, r.why]);
  expect(released).toEqual([[grant?.first, grant?.last, "stopped"]]);
});
