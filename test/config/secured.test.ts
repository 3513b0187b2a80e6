/**
 * idd through the local stack's secured endpoints (stack/secrets.ts): Kafka's SASL_SSL listener
 * (TLS with the stack's CA; SCRAM-SHA-512, also PLAIN and SCRAM-SHA-256), the redis-server with requirepass and the registry
 * with HTTP basic auth. A real worker process answers a real IdClient, `idd replay` rebuilds a counter
 * through the password Redis, wrong passwords fail with one coded line (worker and CLI), the HTTP
 * surface wants its token, and no secret appears in any output, log line or HTTP answer.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { IdClient } from "../../src/client/id-client.js";
import { fromVars, type ServiceSettings } from "../../src/config/services.js";
import { isIddError } from "../../src/core/errors.js";
import { counterKey } from "../../src/redis/keys.js";
import { RegistryClient } from "../../src/registry/client.js";
import { defineSequence } from "../../src/sequences/definition.js";
import { Store } from "../../src/storage/store.js";
import { createKafka } from "../../src/transport/kafka/index.js";
import { dumpDom, visibleText } from "../support/chromium.js";
import { type CliRun, runIdd } from "../support/cli.js";
import { MongoQueries } from "../support/mongo-queries.js";
import { freePort } from "../support/private-redis.js";
import { startWorker, stopWorker, type WorkerProcess } from "../support/workers.js";

const secured = inject("secured");
const run = randomUUID().slice(0, 8);
/** Every text a process or endpoint of this file produced: searched for secrets at the end. */
const outputs: { what: string; text: string }[] = [];
const WRONG = {
  kafka: `wrong-kafka-${run}`,
  redis: `wrong-redis-${run}`,
  registry: `wrong-registry-${run}`,
  mongodb: `wrong-mongodb-${run}`,
};
const HTTP_TOKEN = `http-token-${run}-${randomUUID()}`;

describe.skipIf(!secured)("secured services", () => {
  const env = secured as Record<string, string>;
  const dbUrl = new URL(env.MONGODB_URL as string);
  dbUrl.pathname = `/sec_${run}`;
  const base = {
    ...env,
    MONGODB_URL: dbUrl.toString(),
    IDD_REQUEST_TOPIC: `sec.${run}.requests`,
    IDD_DLQ_TOPIC: `sec.${run}.dlq`,
    IDD_GROUP_ID: `sec-${run}`,
    IDD_REQUEST_PARTITIONS: "2",
  };
  const settings: ServiceSettings = fromVars(base as unknown as Parameters<typeof fromVars>[0], "secured stack");
  const redisPassword = new URL(env.REDIS_URL as string).password;
  const registryPassword = new URL(env.SCHEMA_REGISTRY_URL as string).password;
  const secrets: Record<string, string> = {
    "the Kafka password": env.KAFKA_SASL_PASSWORD as string,
    "the Redis password": redisPassword,
    "the registry password": registryPassword,
    "the MongoDB password": new URL(env.MONGODB_URL as string).password,
    "the HTTP token": HTTP_TOKEN,
    "a wrong Kafka password": WRONG.kafka,
    "a wrong Redis password": WRONG.redis,
    "a wrong registry password": WRONG.registry,
    "a wrong MongoDB password": WRONG.mongodb,
  };
  const sequence = `sec-${run}`;
  const store = new Store(settings.mongodbUrl);
  const queries = new MongoQueries(settings.mongodbUrl);
  let worker: WorkerProcess;
  let http = "";

  const withUrlPassword = (url: string, password: string) => {
    const u = new URL(url);
    u.password = password;
    return u.toString();
  };

  /** `idd …` as a process, with the secured settings and `extra` on top. */
  async function idd(args: string[], extra: Record<string, string> = {}): Promise<CliRun> {
    const r = await runIdd(args, { ...base, ...extra });
    outputs.push({ what: `idd ${args.join(" ")}`, text: r.stdout + r.stderr });
    return r;
  }

  /** A worker that must fail at start: its exit code and every line it wrote. */
  async function failingWorker(id: string, extra: Record<string, string>): Promise<{ code: number | null; lines: string[] }> {
    const w = startWorker(`sec-${run}-${id}`, { ...base, IDD_GROUP_ID: `sec-${run}-${id}`, LOG_LEVEL: "debug", ...extra });
    const code = await Promise.race([w.exited, new Promise<null>((r) => setTimeout(() => r(null), 30_000))]);
    if (code === null) await stopWorker(w, "SIGKILL");
    outputs.push({ what: `worker ${id}`, text: w.log.join("\n") });
    return { code, lines: w.log };
  }

  const coded = (text: string) => text.split("\n").filter((l) => l.startsWith("idd: "));

  beforeAll(async () => {
    await store.createSequence(defineSequence({ name: sequence }, new Date()));
    const port = await freePort();
    http = `http://127.0.0.1:${port}`;
    worker = startWorker(`sec-${run}`, { ...base, IDD_HTTP_PORT: String(port), IDD_HTTP_TOKEN: HTTP_TOKEN, LOG_LEVEL: "debug" });
    await worker.assigned;
  }, 120_000);

  afterAll(async () => {
    if (worker) {
      await stopWorker(worker);
      outputs.push({ what: "worker", text: worker.log.join("\n") });
    }
    await queries.dropDatabase();
    await store.close();
  });

  test("round trip: an Avro IdClient request through SCRAM-SHA-512 Kafka and the basic-auth registry, answered by a worker on the password Redis; then idd replay through that Redis", async () => {
    const client = await IdClient.connect({
      brokers: settings.kafkaBrokers,
      kafkaSecurity: settings.security.kafka,
      requestTopic: base.IDD_REQUEST_TOPIC,
      format: "avro",
      schemaRegistryUrl: settings.schemaRegistryUrl,
      schemaRegistrySecurity: settings.security.registry,
      timeoutMs: 30_000,
    });
    try {
      const first = await client.next(sequence, 3);
      expect(first.numbers).toEqual([1n, 2n, 3n]);

      // The counter vanishes from Redis (as after data loss); replay rebuilds it through the password.
      const redis = new Redis(settings.redisUrl);
      const key = counterKey(sequence, null);
      const before = await redis.hget(key, "cur");
      await redis.del(key);
      redis.disconnect();
      expect(before).not.toBeNull();
      const replayed = await idd(["replay", "--sequence", sequence, "--settle-ms", "1"]);
      expect(replayed.stderr).toMatch(/1 counters \(1 created/);
      expect(replayed.status).toBe(0);

      // The rebuilt counter is not below what Redis had handed out, and the dispenser carries on above it.
      const check = new Redis(settings.redisUrl);
      expect(BigInt((await check.hget(key, "cur")) as string)).toBeGreaterThanOrEqual(BigInt(before as string));
      check.disconnect();
      const after = await client.next(sequence, 2);
      expect(after.numbers[0]).toBeGreaterThan(3n);
    } finally {
      await client.close({ deleteReplyTopic: true });
    }
  });

  test("PLAIN and SCRAM-SHA-256 log in too; a wrong password is KAFKA_AUTH_FAILED, naming the user, not the password", async () => {
    const sasl = settings.security.kafka.sasl as NonNullable<ServiceSettings["security"]["kafka"]["sasl"]>;
    for (const mechanism of ["plain", "scram-sha-256"] as const) {
      const kafka = createKafka({
        brokers: settings.kafkaBrokers,
        clientId: `sec-${mechanism}`,
        security: { ...settings.security.kafka, sasl: { ...sasl, mechanism } },
      });
      expect((await kafka.topicPartitions()).has(base.IDD_REQUEST_TOPIC)).toBe(true);
    }
    const wrong = createKafka({
      brokers: settings.kafkaBrokers,
      clientId: "sec-wrong",
      security: { ...settings.security.kafka, sasl: { ...sasl, password: WRONG.kafka } },
    });
    const e = await wrong.topicPartitions().catch((x: unknown) => x);
    expect(isIddError(e, "KAFKA_AUTH_FAILED")).toBe(true);
    expect((e as Error).message).toMatch(/refused user "idd" \(SCRAM-SHA-512\)/);
  });

  test("the stack's registry enforces basic auth: no credentials or a wrong password is REGISTRY_AUTH_FAILED", async () => {
    const anonymous = new URL(settings.schemaRegistryUrl);
    anonymous.username = "";
    anonymous.password = "";
    for (const url of [anonymous.toString(), withUrlPassword(settings.schemaRegistryUrl, WRONG.registry)]) {
      const ca = settings.security.registry.ca;
      const e = await new RegistryClient(url, { security: { ...(ca && { ca }) } })
        .register(`sec-${run}-value`, { type: "string" })
        .catch((x: unknown) => x);
      expect(isIddError(e, "REGISTRY_AUTH_FAILED")).toBe(true);
      outputs.push({ what: "registry error", text: (e as Error).message });
    }
  });

  test("wrong passwords fail with one coded line: the CLI and the worker, for Kafka, Redis, MongoDB and the registry", async () => {
    const kafkaWrong = { KAFKA_SASL_PASSWORD: WRONG.kafka };
    const mongodbWrong = { MONGODB_URL: withUrlPassword(base.MONGODB_URL, WRONG.mongodb) };
    const redisWrong = { REDIS_URL: withUrlPassword(settings.redisUrl, WRONG.redis) };
    const registryWrong = { SCHEMA_REGISTRY_URL: withUrlPassword(settings.schemaRegistryUrl, WRONG.registry) };

    const next = await idd(["next", sequence], kafkaWrong);
    expect(next.status).toBe(2);
    expect(coded(next.stderr)).toEqual([expect.stringMatching(/^idd: KAFKA_AUTH_FAILED: Kafka at 127\.0\.0\.1:\d+ refused user "idd"/)]);
    // TLS: every secured endpoint's certificate is signed by the stack's own CA; without it the client
    // refuses the server. Kafka's listener also wants a client certificate (mutual TLS).
    const untrusted = await idd(["next", sequence], { KAFKA_SSL_CA_FILE: "" });
    expect(untrusted.status).toBe(2);
    expect(coded(untrusted.stderr)).toEqual([
      expect.stringMatching(/^idd: KAFKA_TLS_FAILED: Kafka at 127\.0\.0\.1:\d+: .*certificate.*; set KAFKA_SSL_CA_FILE/),
    ]);
    const noClientCert = await idd(["next", sequence], { KAFKA_SSL_CERT_FILE: "", KAFKA_SSL_KEY_FILE: "" });
    expect(noClientCert.status).toBe(2);
    expect(coded(noClientCert.stderr)).toEqual([expect.stringMatching(/^idd: KAFKA_TLS_FAILED: .*KAFKA_SSL_CERT_FILE/)]);
    const registryUntrusted = await idd(["next", sequence, "--avro"], { SCHEMA_REGISTRY_CA_FILE: "" });
    expect(registryUntrusted.status).toBe(2);
    expect(coded(registryUntrusted.stderr)).toEqual([
      expect.stringMatching(/^idd: REGISTRY_TLS_FAILED: POST https:\/\/127\.0\.0\.1:\d+\/apis\/.*; set SCHEMA_REGISTRY_CA_FILE/),
    ]);
    const mongoUntrusted = await idd(["seq", "show", sequence], { MONGODB_URL: base.MONGODB_URL.replace(/&tlsCAFile=[^&]*/, "") });
    expect(mongoUntrusted.status).toBe(2);
    expect(coded(mongoUntrusted.stderr)).toEqual([expect.stringMatching(/^idd: MONGODB_TLS_FAILED: MongoDB at mongodb:\/\/idd:\*\*\*@/)]);
    const avro = await idd(["next", sequence, "--avro"], registryWrong);
    expect(avro.status).toBe(2);
    expect(coded(avro.stderr)).toEqual([expect.stringMatching(/^idd: REGISTRY_AUTH_FAILED: POST https:\/\/127\.0\.0\.1:\d+\/apis/)]);
    const replay = await idd(["replay", "--dry-run"], redisWrong);
    expect(replay.status).toBe(2);
    expect(coded(replay.stderr)).toEqual([
      expect.stringMatching(/^idd: REDIS_AUTH_FAILED: Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ refused the login: WRONGPASS/),
    ]);
    const noPassword = await idd(["replay", "--dry-run"], { REDIS_URL: withUrlPassword(settings.redisUrl, "") });
    expect(coded(noPassword.stderr)).toEqual([expect.stringMatching(/^idd: REDIS_AUTH_FAILED: .* NOAUTH/)]);
    const show = await idd(["seq", "show", sequence], mongodbWrong);
    expect(show.status).toBe(2);
    expect(coded(show.stderr)).toEqual([
      expect.stringMatching(
        /^idd: MONGODB_AUTH_FAILED: MongoDB at mongodb:\/\/idd:\*\*\*@127\.0\.0\.1:\d+\/sec_\w+\?authSource=idd&tls=true\S* refused the login/,
      ),
    ]);
    const anonymous = new URL(base.MONGODB_URL);
    anonymous.username = "";
    anonymous.password = "";
    const noLogin = await idd(["seq", "show", sequence], { MONGODB_URL: anonymous.toString() });
    expect(coded(noLogin.stderr)).toEqual([expect.stringMatching(/^idd: MONGODB_AUTH_FAILED: .* wants a login/)]);

    for (const [id, extra, code] of [
      ["kafka", kafkaWrong, "KAFKA_AUTH_FAILED"],
      ["redis", redisWrong, "REDIS_AUTH_FAILED"],
      ["registry", registryWrong, "REGISTRY_AUTH_FAILED"],
      ["mongodb", mongodbWrong, "MONGODB_AUTH_FAILED"],
    ] as const) {
      const w = await failingWorker(id, extra);
      expect(w.code, `worker with a wrong ${id} password`).toBe(2);
      expect(coded(w.lines.join("\n")), id).toEqual([expect.stringMatching(new RegExp(`^idd: ${code}: `))]);
    }
  }, 180_000); // 14 CLI and worker processes, one after another

  test("HTTP surface with IDD_HTTP_TOKEN: probes and the status page's shell open, everything else 401 without the right bearer token", async () => {
    const get = async (path: string, token?: string) => {
      const res = await fetch(`${http}${path}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
      const text = await res.text();
      outputs.push({ what: `GET ${path}`, text: `${JSON.stringify([...res.headers])}\n${text}` });
      return res.status;
    };
    expect(await get("/healthz")).toBe(200);
    expect(await get("/readyz")).toBe(200);
    expect(await get("/status")).toBe(200); // the page's static shell: no data in it
    for (const path of ["/metrics", "/status.json", "/nothing-here"]) {
      expect(await get(path), path).toBe(401);
      expect(await get(path, `${HTTP_TOKEN}x`), path).toBe(401);
      expect(await get(path, HTTP_TOKEN.slice(0, -1)), path).toBe(401);
    }
    expect(await get("/metrics", HTTP_TOKEN)).toBe(200);
    expect(await get("/status.json", HTTP_TOKEN)).toBe(200);
    // idd status sends the token it is given; without it, one coded line.
    const withToken = await idd(["status", "--url", http, "--token", HTTP_TOKEN]);
    expect(withToken.status).toBe(0);
    expect(withToken.stdout).toContain(sequence);
    const without = await idd(["status", "--url", http]);
    expect(without.status).toBe(1);
    expect(without.stderr).toMatch(/STATUS_UNAVAILABLE: .*HTTP 401: pass the worker's token/);
    // The page in a real browser: it sends the token from its URL fragment with each poll.
    const browser = inject("chromium");
    if (!browser.path) throw new Error(`no headless browser: ${browser.problem}`);
    const page = visibleText(await dumpDom(browser.path, `${http}/status#token=${HTTP_TOKEN}`, { budgetMs: 1500 }));
    expect(page).toContain("live · updated");
    expect(page).toContain(sequence);
    const locked = visibleText(await dumpDom(browser.path, `${http}/status`, { budgetMs: 1500 }));
    expect(locked).toContain("this worker wants its token");
    expect(locked).not.toContain(sequence);
    outputs.push({ what: "the status page", text: page }, { what: "the status page without its token", text: locked });
  });

  test("no secret appears in any output: CLI runs, worker logs (debug level, kafkajs and ioredis errors included), HTTP answers", async () => {
    await stopWorker(worker);
    outputs.push({ what: "worker", text: worker.log.join("\n") });
    worker = undefined as unknown as WorkerProcess;
    // The outputs really are there: the checks below looked at something.
    const all = outputs.map((o) => o.text).join("\n");
    expect(all).toMatch(/KAFKA_AUTH_FAILED/);
    expect(all).toMatch(/WRONGPASS/);
    expect(all).toMatch(/idd_requests_total/);
    expect(outputs.length).toBeGreaterThanOrEqual(15);
    const leaks = outputs.flatMap((o) =>
      Object.entries(secrets)
        .filter(([, s]) => o.text.includes(s))
        .map(([name]) => `${o.what} shows ${name}`),
    );
    expect(leaks).toEqual([]);
  });
});
