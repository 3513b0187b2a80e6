/**
 * A snowflake sequence's first lease, told apart from a lost one by MongoDB (design §5.6): a new
 * sequence answers at once (its first lease is recorded in MongoDB before it is asked for), and once
 * Redis has lost its state (the sequence's keys deleted) a new holder holds off one lease TTL, with
 * every id of both holders collected and unique. Redis is the file's own (ownRedis), MongoDB the
 * shared one under a database of the file's own.
 */
import { randomUUID } from "node:crypto";
import { afterAll, expect, inject, test } from "vitest";
import { isIddError } from "../../../../src/core/errors.js";
import { firstLeaseCheck } from "../../../../src/issuing/sources/snowflake/first-lease.js";
import { SnowflakeIssuer } from "../../../../src/issuing/sources/snowflake/issuer.js";
import { WorkerLease } from "../../../../src/issuing/sources/snowflake/lease.js";
import { snowflakeLeaseKey, snowflakeUntilKey } from "../../../../src/redis/keys.js";
import { defineSequence } from "../../../../src/sequences/definition.js";
import type { SequenceDef } from "../../../../src/sequences/sequence-def.js";
import { Store } from "../../../../src/storage/store.js";
import { MongoQueries } from "../../../support/mongo-queries.js";
import { EPOCH, idsOf, ownRedis, sleep } from "./support.js";

const services = inject("services");
const { redis } = await ownRedis();
const dbName = `test_${randomUUID().replaceAll("-", "")}`;
const store = new Store(services.mongodbUrl, { dbName });
const queries = new MongoQueries(services.mongodbUrl, dbName);
const issuers: SnowflakeIssuer[] = [];
afterAll(async () => {
  await Promise.all(issuers.map((i) => i.close()));
  await queries.dropDatabase();
  await store.close();
});

// A margin of 1.2 s: a first lease is "new" when MongoDB recorded it within 0.6 s of Redis's answer.
const LEASE = { ttlMs: 2000, renewEveryMs: 400, marginMs: 1200 };
const WORKER_BITS = 2;

function issuer(firstLease = firstLeaseCheck(store)): SnowflakeIssuer {
  const i = new SnowflakeIssuer({ redis, lease: LEASE, firstLease });
  issuers.push(i);
  return i;
}

async function newSequence(): Promise<SequenceDef> {
  const def = defineSequence(
    { name: `snow-first-${randomUUID()}`, kind: "snowflake", layout: { epoch: EPOCH, workerBits: WORKER_BITS } },
    new Date(),
  );
  await store.createSequence(def);
  return def;
}

/** What Redis holds of the sequence's snowflake state, gone: as after a flush, for this sequence only. */
async function loseState(def: SequenceDef): Promise<void> {
  const leases = Array.from({ length: 2 ** WORKER_BITS }, (_, id) => snowflakeLeaseKey(def.name, id));
  await redis.del(snowflakeUntilKey(def.name), ...leases);
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "OK";
  } catch (e) {
    return isIddError(e) ? e.code : String(e);
  }
}

test("a new snowflake sequence answers at once", async () => {
  const def = await newSequence();
  const ids = idsOf(await issuer().take(def, 50));
  expect(new Set(ids).size).toBe(50);
  // MongoDB recorded the first lease: a later "first" lease is none.
  expect(await store.recordFirstSnowflakeLease(def.name)).toBe(false);
});

test("two workers' first leases at once: the one that recorded it answers at once; no id twice", async () => {
  for (let round = 0; round < 5; round++) {
    const def = await newSequence();
    const both = [issuer(), issuer()];
    const first = await Promise.all(both.map((i) => code(i.take(def, 1))));
    expect(first).toContain("OK");
    for (const c of first) expect(["OK", "SNOWFLAKE_HOLD_OFF"]).toContain(c);
    // The held-off one answers once its hold-off has passed; every id of both is collected.
    const all: bigint[] = [];
    const deadline = Date.now() + 2 * LEASE.ttlMs;
    for (const i of both)
      for (;;) {
        try {
          all.push(...idsOf(await i.take(def, 20)));
          break;
        } catch (e) {
          if (!isIddError(e, "SNOWFLAKE_HOLD_OFF") || Date.now() > deadline) throw e;
          await sleep(50);
        }
      }
    expect(new Set(all).size).toBe(all.length);
  }
}, 30_000);

test("the first lease's recorder reaches Redis after another worker's held-off lease: it still answers at once", async () => {
  const def = await newSequence();
  const lease = (firstLease: (s: string) => Promise<boolean>) =>
    new WorkerLease({ redis, sequence: def.name, workerBits: WORKER_BITS, ...LEASE, autoRenew: false, firstLease });
  let recorded!: () => void;
  const isRecorded = new Promise<void>((r) => {
    recorded = r;
  });
  let go!: () => void;
  const gate = new Promise<void>((r) => {
    go = r;
  });
  const first = lease(async (name) => {
    const wrote = await store.recordFirstSnowflakeLease(name);
    recorded();
    await gate; // held here until the other worker has its lease
    return wrote;
  });
  const pending = first.acquire();
  await isRecorded;
  const other = lease(firstLeaseCheck(store));
  expect((await other.acquire()).heldOff).toBe(true); // it found the record: the missing state may be lost
  go();
  const grant = await pending;
  expect(grant.heldOff).toBe(false);
  expect(grant.workerId).not.toBe(other.workerId);
  first.abandon();
  other.abandon();
});

test("after Redis lost the sequence's state, a new holder holds off one TTL; no id is issued twice", async () => {
  const def = await newSequence();
  const a = issuer();
  const fromA = idsOf(await a.take(def, 10));
  await loseState(def);
  const b = issuer();
  const lostAt = Date.now();
  expect(await code(b.take(def, 1))).toBe("SNOWFLAKE_HOLD_OFF");
  // Both issue until well past the hold-off: A while its lease is still valid locally (then it
  // finds the lease gone and acquires again, held off as B), B once the hold-off has passed.
  const fromB: bigint[] = [];
  const seen = new Map<string, number>();
  while (Date.now() < lostAt + 2.5 * LEASE.ttlMs) {
    for (const [who, i, out] of [
      ["A", a, fromA],
      ["B", b, fromB],
    ] as const) {
      try {
        out.push(...idsOf(await i.take(def, 5)));
      } catch (e) {
        const c = isIddError(e) ? e.code : String(e);
        seen.set(`${who} ${c}`, (seen.get(`${who} ${c}`) ?? 0) + 1);
        if (!isIddError(e) || !e.retriable) throw e;
      }
    }
    await sleep(5);
  }
  expect(fromB.length).toBeGreaterThan(0);
  const all = [...fromA, ...fromB];
  expect(new Set(all).size, `codes seen: ${JSON.stringify([...seen])}`).toBe(all.length);
}, 30_000);

test("a sequence created before first leases were recorded holds off on its first lease", async () => {
  const def = await newSequence();
  await queries.collection<{ _id: string }>("sequences").updateOne({ _id: def.name }, { $unset: { snowflakeLeasedAt: "" } });
  expect(await code(issuer().take(def, 1))).toBe("SNOWFLAKE_HOLD_OFF");
});

test("MongoDB unreachable: a missing state is new or lost only when this worker knows", async () => {
  const def = await newSequence();
  // The worker's MongoDB "goes down": its calls go to a port where none listens (real driver failures).
  const nowhere = new Store("mongodb://127.0.0.1:9/idd", { serverSelectionTimeoutMS: 300 });
  let down = false;
  const check = firstLeaseCheck({ recordFirstSnowflakeLease: (name) => (down ? nowhere : store).recordFirstSnowflakeLease(name) });
  down = true;
  expect(await code(issuer(check).take(def, 1))).toBe("UNAVAILABLE"); // never leased as far as it knows: no lease
  down = false;
  expect(await code(issuer(check).take(def, 1))).toBe("OK");
  await loseState(def);
  down = true;
  expect(await code(issuer(check).take(def, 1))).toBe("SNOWFLAKE_HOLD_OFF"); // it saw the sequence leased: lost
  await nowhere.close();
});
