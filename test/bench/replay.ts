/**
 * `npm run bench:replay [-- --sequences N --grants N]`: how long `idd replay` takes to rebuild an
 * emptied Redis from MongoDB. Seeds a database of its own with N sequences (half strict, so their
 * grants are read), one reservation record each plus a raise, and N grant records spread over the
 * strict ones; then empties a Redis of its own and replays, timing each phase.
 */
import { randomUUID } from "node:crypto";
import { Long } from "mongodb";
import { replay } from "../../src/recovery/replay.js";
import { counterKey } from "../../src/redis/keys.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { benchServices } from "../support/bench-services.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { startPrivateRedis } from "../support/private-redis.js";
import { scriptClient } from "../support/redis.js";

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
};
const nSeq = arg("sequences", 10_000);
const nGrants = arg("grants", 1_000_000);
const say = (s: string) => process.stdout.write(`${s}\n`);
const { services, stop } = await benchServices(say);
const dbName = `bench_replay_${randomUUID().slice(0, 8)}`;
const store = new Store(services.mongodbUrl, { dbName });
const queries = new MongoQueries(services.mongodbUrl, dbName);
const server = await startPrivateRedis();
const redis = scriptClient(server.url);
try {
  await store.ensureIndexes();
  let t = Date.now();
  const names = Array.from({ length: nSeq }, (_, i) => `rb-${i}`);
  const now = new Date();
  for (let i = 0; i < nSeq; i += 1000) {
    await queries.collection("sequences").insertMany(
      names.slice(i, i + 1000).map((name, j) => {
        const { name: _id, ...d } = defineSequence({ name, grantLog: (i + j) % 2 === 0 ? "strict" : "relaxed" }, now);
        return { _id, ...d, start: Long.fromBigInt(d.start), maxValue: Long.fromBigInt(d.maxValue) } as never;
      }),
    );
  }
  const reservations = names.flatMap((sequence) => [
    { sequence, period: null, max: 10_000n, epoch: 1, worker: "seed" },
    { sequence, period: null, max: 20_000n, epoch: 1, worker: "seed" },
  ]);
  for (let i = 0; i < reservations.length; i += 5000) await store.appendReservations(reservations.slice(i, i + 5000));
  const strict = names.filter((_, i) => i % 2 === 0);
  const perSeq = Math.ceil(nGrants / strict.length);
  let written = 0;
  for (let s = 0; s < strict.length && written < nGrants; s += Math.ceil(10_000 / perSeq)) {
    const batch = strict.slice(s, s + Math.ceil(10_000 / perSeq)).flatMap((sequence) =>
      Array.from({ length: perSeq }, (_, k) => ({
        claim: `${sequence}/${k}`,
        sequence,
        period: null,
        first: BigInt(k * 10 + 1),
        last: BigInt(k * 10 + 10),
        epoch: 1,
        worker: "seed",
        at: now,
      })),
    );
    await store.appendGrants(batch.slice(0, nGrants - written));
    written += Math.min(batch.length, nGrants - written);
    if (written % 100_000 < 10_000) say(`seeded ${written.toLocaleString("en")} grants (${((Date.now() - t) / 1000).toFixed(0)} s)`);
  }
  say(`seeded ${nSeq} sequences, ${reservations.length} reservations, ${written} grants in ${((Date.now() - t) / 1000).toFixed(1)} s`);

  t = Date.now();
  const r = await replay(redis, store, { progress: (l) => say(`replay: ${l}`) });
  const ms = Date.now() - t;
  const sample = await redis.hgetall(counterKey("rb-0", null));
  say(
    `replay: ${r.counters} counters, ${r.reservationRecords} reservation and ${r.grantRecords} grant records read (reservations twice: before and after fencing), ${r.failed.length} failed, in ${(ms / 1000).toFixed(1)} s; rb-0 (strict) now cur=${sample.cur} max=${sample.max}`,
  );
} finally {
  redis.disconnect();
  await server.stop();
  await queries.dropDatabase();
  await store.close();
  await stop();
}
process.exit(0);
