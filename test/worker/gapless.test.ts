/**
 * Gapless numbering on real worker processes: several clients take numbers of a gapless sequence,
 * confirm some, void some and leave some pending, while the worker that owns the sequence is
 * SIGKILLed. Every number is accounted for afterwards, from MongoDB: the numbers are exactly
 * [1, last] with no hole and no duplicate; each is confirmed (the ones clients confirmed), voided with
 * the clients' reason, or voided `expired` (left pending past the timeout, or taken by a request
 * whose reply was lost with the killed worker). /metrics and /status.json show the counts. Hostile
 * CONFIRM and VOID requests get their codes.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import { isIddError } from "../../src/core/errors.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { freePort } from "../support/private-redis.js";
import { waitFor } from "../support/wait.js";
import { ownDatabase, serviceEnv, startWorker, stopWorker, type WorkerProcess } from "../support/workers.js";

const services = ownDatabase(inject("services"), "gapless");
const run = randomUUID().slice(0, 8);
const env = {
  ...serviceEnv(services),
  IDD_REQUEST_TOPIC: `gapless.${run}.requests`,
  IDD_DLQ_TOPIC: `gapless.${run}.dlq`,
  IDD_GROUP_ID: `gapless-${run}`,
  IDD_REQUEST_PARTITIONS: "1", // one owner at a time: the one to kill
  IDD_SESSION_TIMEOUT_MS: "6000",
  IDD_GAPLESS_SWEEP_MS: "300",
  IDD_MAX_COUNT: "500",
};
const seq = `gl-${run}`;
const other = `gl-other-${run}`;
const CONFIRM_TIMEOUT_MS = 10_000;
const workers: WorkerProcess[] = [];
const ports = new Map<WorkerProcess, number>();
const clients: IdClient[] = [];
const store = new Store(services.mongodbUrl);
const queries = new MongoQueries(services.mongodbUrl);
const owns = (w: WorkerProcess) => w.log.some((l) => l.includes('"msg":"partitions assigned"') && /"partitions":\[0\]/.test(l));
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => "OK",
    (e: unknown) => (isIddError(e) ? e.code : ((e as { code?: string }).code ?? String(e))),
  );

beforeAll(async () => {
  await store.createSequence(defineSequence({ name: seq, gapless: true, confirmTimeout: CONFIRM_TIMEOUT_MS }, new Date()));
  await store.createSequence(defineSequence({ name: other, gapless: true, start: 1_000_000 }, new Date()));
  for (const id of ["g1", "g2"]) {
    const port = await freePort();
    const w = startWorker(`${id}-${run}`, { ...env, IDD_HTTP_PORT: String(port) });
    ports.set(w, port);
    workers.push(w);
  }
  await Promise.all(workers.map((w) => w.assigned));
  for (let i = 0; i < 3; i++)
    clients.push(
      await IdClient.connect({
        brokers: services.kafkaBrokers,
        requestTopic: env.IDD_REQUEST_TOPIC,
        timeoutMs: 60_000,
        ...(i === 2 && { format: "avro" as const, schemaRegistryUrl: services.schemaRegistryUrl }),
      }),
    );
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close({ deleteReplyTopic: true })));
  await Promise.all(workers.map((w) => stopWorker(w, "SIGKILL")));
  await queries.dropDatabase();
  await store.close();
});

test("concurrent clients across a SIGKILLed owner: every number confirmed, voided with a reason, or expired; no hole, no duplicate", async () => {
  const received: bigint[] = [];
  const confirmed = new Set<bigint>();
  const voided = new Map<bigint, string>();
  /** Numbers whose CONFIRM or VOID came after the sweep had voided them (a failover can take longer than the timeout). */
  const late = new Set<bigint>();
  const failures: string[] = [];
  const perClient = 60;
  let done = 0;
  // One worker sweeps and counts for the pool, the owner of request partition 0; the other says so.
  await waitFor("one worker counting gapless numbers, the other not", async () => {
    const counted = await Promise.all(
      workers.map(
        async (w) =>
          ((await (await fetch(`http://127.0.0.1:${ports.get(w)}/status.json`)).json()) as { gaplessCounted?: boolean }).gaplessCounted,
      ),
    );
    return counted.filter((c) => c === false).length === workers.length - 1 && counted.includes(true);
  });
  let killed: WorkerProcess | undefined;
  const loop = async (client: IdClient, c: number) => {
    for (let i = 0; i < perClient; i++) {
      if (!killed && ++done > (perClient * clients.length) / 3) {
        killed = workers.find(owns);
        killed?.proc.kill("SIGKILL");
      }
      try {
        const r = await client.next(seq, 1 + ((i + c) % 3), { requestId: `${c}-${i}` });
        received.push(...r.numbers);
        const [first, ...rest] = r.numbers as [bigint, ...bigint[]];
        if (i % 5 === 4) continue; // left pending: the sweep voids it, expired
        const settled = async (numbers: bigint[], settle: () => Promise<{ numbers: bigint[] }>) => {
          const code = await codeOf(settle().then((s) => expect(s.numbers).toEqual([...new Set(numbers)])));
          if (code === "GAPLESS_NOT_PENDING")
            for (const n of numbers) late.add(n); // nothing of it was settled
          else if (code !== "OK") failures.push(`${c}-${i}: ${code}`);
          return code === "OK";
        };
        if (i % 4 === 1) {
          const reason = `cancelled by client ${c}`;
          if (await settled([first], () => client.void(seq, [first], reason))) voided.set(first, reason);
        } else if (await settled([first, first], () => client.confirm(seq, [first, first]))) confirmed.add(first); // twice: once
        if (rest.length > 0 && (await settled(rest, () => client.confirm(seq, rest)))) for (const n of rest) confirmed.add(n);
      } catch (e) {
        failures.push(`${c}-${i}: ${(e as Error).message}`);
      }
    }
  };
  await Promise.all(clients.map((c, i) => loop(c, i)));
  expect(failures).toEqual([]);
  expect(killed).toBeDefined();
  expect(new Set(received).size).toBe(received.length);

  // Past the timeout, every number still pending is voided by the survivor's sweep.
  const survivor = workers.find((w) => w !== killed) as WorkerProcess;
  await waitFor("no pending number left", async () => (await queries.gaplessOf(seq)).every((r) => r.state !== "pending"), {
    timeoutMs: CONFIRM_TIMEOUT_MS + 20_000,
    everyMs: 500,
  });
  const rows = await queries.gaplessOf(seq);
  const numbers = rows.map((r) => r.number);
  expect(numbers).toEqual(Array.from({ length: rows.length }, (_, i) => BigInt(i + 1))); // exactly [1, last]
  expect(new Set(received).size).toBeLessThanOrEqual(rows.length);
  const byNumber = new Map(rows.map((r) => [r.number, r]));
  for (const n of received) expect(byNumber.has(n), `${n} received`).toBe(true);
  const states = { confirmed: 0, voided: 0, expired: 0 };
  for (const r of rows) {
    if (confirmed.has(r.number)) expect([r.number, r.state]).toEqual([r.number, "confirmed"]);
    else if (voided.has(r.number)) expect([r.number, r.state, r.reason]).toEqual([r.number, "voided", voided.get(r.number)]);
    else if (r.reason !== "expired" && !received.includes(r.number)) {
      // Taken for a request read again after the kill (a retry), which got its first numbers back:
      // voided at once, never sent.
      expect([r.number, r.state, r.reason]).toEqual([
        r.number,
        "voided",
        expect.stringMatching(/^a retry of request .+, answered with its first numbers$/),
      ]);
    } else expect([r.number, r.state, r.reason]).toEqual([r.number, "voided", "expired"]);
    if (r.state === "confirmed") states.confirmed++;
    else if (r.reason === "expired") states.expired++;
    else states.voided++;
  }
  process.stderr.write(
    `gapless: ${rows.length} numbers, ${received.length} received, ${JSON.stringify(states)}, ${late.size} settled too late\n`,
  );

  // The survivor's /metrics and /status.json count them (computed by its sweep, not per request).
  const port = ports.get(survivor) as number;
  await waitFor("the survivor's /metrics to count every state", async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const count = (state: string) =>
      Number(new RegExp(`^idd_gapless_numbers\\{sequence="${seq}",state="${state}"\\} (\\d+)$`, "m").exec(text)?.[1]);
    return count("confirmed") === states.confirmed && count("voided") === states.voided + states.expired && !(count("pending") > 0);
  });
  const status = (await (await fetch(`http://127.0.0.1:${port}/status.json`)).json()) as {
    gapless: { sequence: string; confirmed: number }[];
  };
  expect(status.gapless.find((g) => g.sequence === seq)?.confirmed).toBe(states.confirmed);
}, 240_000);

test("hostile CONFIRM and VOID requests: each refused with its code, nothing settled", async () => {
  const [client] = clients as [IdClient];
  const mine = await client.next(other, 2);
  const [a, b] = mine.numbers as [bigint, bigint];
  const plain = `plain-${run}`;
  await store.createSequence(defineSequence({ name: plain }, new Date()));
  const cases: [string, Promise<unknown>][] = [
    ["numbers of another sequence", client.confirm(seq, [a])], // seq's numbers stop far below 1,000,000
    ["a number never issued", client.confirm(other, [b + 1000n])],
    [
      "a huge array",
      client.confirm(
        other,
        Array.from({ length: 501 }, () => a),
      ),
    ],
    ["no numbers", client.confirm(other, [])],
    ["a negative number", client.confirm(other, [-1n])],
    ["VOID without a reason", client.reply(other, 1, { settle: { action: "VOID", numbers: [a], reason: null } }).then(okOrThrow)],
    ["VOID with a blank reason", client.void(other, [a], "  ")],
    ["a period for a sequence without", client.confirm(other, [a], { period: "2026" })],
    ["a sequence that is not gapless", client.confirm(plain, [1n])],
  ];
  const codes: Record<string, string> = {};
  for (const [what, p] of cases) codes[what] = await codeOf(p);
  expect(codes).toEqual({
    "numbers of another sequence": "GAPLESS_NOT_PENDING",
    "a number never issued": "GAPLESS_NOT_PENDING",
    "a huge array": "INVALID_COUNT",
    "no numbers": "INVALID_COUNT",
    "a negative number": "BAD_REQUEST",
    "VOID without a reason": "BAD_REQUEST",
    "VOID with a blank reason": "BAD_REQUEST",
    "a period for a sequence without": "BAD_REQUEST",
    "a sequence that is not gapless": "NOT_GAPLESS",
  });
  expect((await queries.gaplessOf(other)).map((r) => r.state)).toEqual(["pending", "pending"]);
  // And the worker still answers.
  expect((await client.void(other, [a, b], "test over")).numbers).toEqual([a, b]);
});

function okOrThrow<T extends { status: string; error: { code: string; message: string } | null }>(r: T): T {
  if (r.status !== "OK") throw Object.assign(new Error(r.error?.message), { code: r.error?.code });
  return r;
}
