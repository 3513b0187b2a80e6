/**
 * `npx tsx test/bench/memory.ts [--sequences N]`: what N (1,000) sequences cost in memory, measured
 * on one idd worker process: its resident set, and Redis's used memory and keys, idle, after each of
 * N new sequences (IDD_AUTO_CREATE_SEQUENCES) was asked for one number, and after the same N were
 * asked again (no new counter: what that adds is the recorded answers of the requests, which carry a
 * requestId, kept IDD_DEDUPE_WINDOW_MS), so a sequence's own cost is told from its requests'. A short measurement, not a benchmark. Uses the local stack (IDD_STACK_*) or
 * the four service variables; its own database and topic.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { Redis } from "ioredis";
import { IdClient } from "../../src/client/id-client.js";
import { benchServices } from "../support/bench-services.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { poll } from "../support/wait.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker } from "../support/workers.js";
import { num } from "./args.js";

const say = (s: string) => process.stdout.write(`${s}\n`);
const n = num("sequences", 1000);
const run = randomUUID().slice(0, 8);
const { services: all, stop } = await benchServices(say);
const services = ownDatabase(all, `memory-${run}`);
const redis = new Redis(services.redisUrl);
const topic = `memory.${run}.requests`;
const worker = startWorker(`memory-${run}`, {
  ...serviceEnv(services),
  IDD_REQUEST_TOPIC: topic,
  IDD_DLQ_TOPIC: `memory.${run}.dlq`,
  IDD_GROUP_ID: `memory-${run}`,
  IDD_REQUEST_PARTITIONS: "2",
  IDD_AUTO_CREATE_SEQUENCES: "true",
});
const rssKb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${worker.proc.pid}/status`, "utf8"))?.[1]);
const redisUsed = async () => Number(/used_memory:(\d+)/.exec(await redis.info("memory"))?.[1]);
const settle = () => new Promise((r) => setTimeout(r, 3000));

try {
  if (!(await poll(() => worker.log.some((l) => l.includes('"msg":"partitions assigned"')), { timeoutMs: 60_000 })))
    throw new Error("worker not assigned");
  const client = await IdClient.connect({ brokers: services.kafkaBrokers, requestTopic: topic, timeoutMs: 60_000 });
  await client.next(`mem-${run}-warmup`, 1);
  await settle();
  const rows: { step: string; rssMb: number; redisMb: number; redisKeys: number }[] = [];
  const measure = async (step: string) =>
    rows.push({ step, rssMb: rssKb() / 1024, redisMb: (await redisUsed()) / 2 ** 20, redisKeys: await redis.dbsize() });
  await measure("idle, one sequence");
  for (let i = 0; i < n; i += 100)
    await Promise.all(Array.from({ length: Math.min(100, n - i) }, (_, j) => client.next(`mem-${run}-a${i + j}`, 1)));
  await settle();
  await measure(`${n} new sequences`);
  for (let i = 0; i < n; i += 100)
    await Promise.all(Array.from({ length: Math.min(100, n - i) }, (_, j) => client.next(`mem-${run}-a${i + j}`, 1)));
  await settle();
  await measure(`the same ${n} again`);
  await client.close({ deleteReplyTopic: true });
  for (const r of rows)
    say(`${r.step.padEnd(36)} worker RSS ${r.rssMb.toFixed(1)} MB   Redis ${r.redisMb.toFixed(2)} MB, ${r.redisKeys} keys`);
  const [idle, a, b] = rows as [(typeof rows)[0], (typeof rows)[0], (typeof rows)[0]];
  const per = (x: number) => ((x * 1000) / n).toFixed(2);
  say(
    `per 1,000 sequences: worker RSS +${per(a.rssMb - idle.rssMb)} MB; Redis +${per(a.redisMb - idle.redisMb)} MB, of which the requests' recorded answers about ${per(b.redisMb - a.redisMb)} MB (the second round's)`,
  );
} finally {
  await stopWorker(worker, "SIGTERM");
  redis.disconnect();
  await new MongoQueries(services.mongodbUrl).dropDatabase();
  await stop();
}
