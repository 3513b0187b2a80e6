/**
 * IdClient's own rules, on a fake Kafka seam (the real-stack tests cover the wire): requests issued
 * together go out in few sends; timeouts, resends while brokers are unreachable, CLIENT_SEND_FAILED
 * and CLIENT_CLOSED; no timer left behind.
 */
import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { isIddError } from "../errors.js";
import { frame, replySchemaText, replyType } from "../protocol/avro.js";
import type { Batch, BatchContext, ConsumerOptions, OutRecord } from "../transport/kafka.js";
import { IdClient } from "./id-client.js";

const kafka = vi.hoisted(() => ({
  /** What each producer.send was given. */
  sends: [] as OutRecord[][],
  /** Decides each send's fate (default: acknowledged). */
  onSend: (_records: OutRecord[]): Promise<void> => Promise.resolve(),
  onBatch: undefined as ((b: Batch, ctx: BatchContext) => Promise<void>) | undefined,
}));

const registry = vi.hoisted(() => ({ lookups: 0, reply: "" }));

vi.mock("../registry/client.js", () => ({
  RegistryClient: class {
    async register() {
      return 7;
    }
    async schemaById(_id: number) {
      registry.lookups++;
      await new Promise((r) => setImmediate(r));
      return registry.reply;
    }
  },
}));

vi.mock("../transport/kafka.js", () => ({
  createKafka: () => ({
    ensureTopics: async () => {},
    deleteTopics: async () => {},
    producer: async () => ({
      send: async (records: OutRecord[]) => {
        kafka.sends.push(records);
        await kafka.onSend(records);
        return { undeliverable: [] };
      },
      close: async () => {},
    }),
    consumer: async (o: ConsumerOptions) => {
      kafka.onBatch = o.onBatch;
      o.onAssigned?.([0]);
      return { close: async () => {} };
    },
  }),
}));

let offset = 0;
/** Answers records the way idd would, through the client's reply consumer. */
async function reply(records: OutRecord[], status: "OK" | "ERROR" = "OK"): Promise<void> {
  const batch: Batch = {
    topic: "replies",
    partition: 0,
    records: records.map((r) => {
      const req = JSON.parse(r.value.toString("utf8")) as { requestId: string; sequence: string; count: number };
      const n = ++offset;
      const value =
        status === "OK"
          ? `{"requestId":"${req.requestId}","sequence":"${req.sequence}","period":null,"status":"OK","ranges":[{"first":${n * 100},"last":${n * 100 + req.count - 1}}],"formatted":[],"error":null,"issuedAt":1}`
          : `{"requestId":"${req.requestId}","sequence":"${req.sequence}","period":null,"status":"ERROR","ranges":[],"formatted":[],"error":{"code":"UNKNOWN_SEQUENCE","message":"no"},"issuedAt":1}`;
      return {
        key: null,
        value: Buffer.from(value),
        headers: { kafka_correlationId: r.headers.kafka_correlationId as Buffer },
        offset: String(n),
      };
    }),
  };
  await kafka.onBatch?.(batch, { heartbeat: async () => {}, isRunning: () => true, commit: async () => {} });
}

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => "OK",
    (e: unknown) => (isIddError(e) ? e.code : String(e)),
  );

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setImmediate", "clearImmediate", "Date"] });
  kafka.sends = [];
  kafka.onSend = () => Promise.resolve();
});
afterEach(() => {
  vi.useRealTimers();
});

test("requests issued together go out together, at most 500 records a send, and each gets its own reply", async () => {
  const client = await IdClient.connect({ brokers: ["k:1"], replyTopic: "replies" });
  const results = Array.from({ length: 1200 }, (_, i) => client.next(`s${i % 7}`, 1 + (i % 3)));
  await vi.advanceTimersByTimeAsync(0);
  expect(kafka.sends.map((s) => s.length)).toEqual([500, 500, 200]);
  const all = kafka.sends.flat();
  expect(new Set(all.map((r) => (r.headers.kafka_correlationId as Buffer).toString("hex"))).size).toBe(1200);
  await reply([...all].reverse()); // in any order
  const got = await Promise.all(results);
  got.forEach((r, i) => {
    expect(r.sequence).toBe(`s${i % 7}`);
    expect(r.numbers).toHaveLength(1 + (i % 3));
  });
  expect(vi.getTimerCount()).toBe(0);
  await client.close();
});

test("a request without a reply fails with CLIENT_TIMEOUT at its timeout; a late reply is ignored", async () => {
  const client = await IdClient.connect({ brokers: ["k:1"], replyTopic: "replies", timeoutMs: 1000 });
  const r = codeOf(client.next("a"));
  await vi.advanceTimersByTimeAsync(999);
  expect(kafka.sends).toHaveLength(1);
  await vi.advanceTimersByTimeAsync(1);
  expect(await r).toBe("CLIENT_TIMEOUT");
  await reply(kafka.sends[0] as OutRecord[]);
  expect(vi.getTimerCount()).toBe(0);
  await client.close();
});

test("error replies reject with their code", async () => {
  const client = await IdClient.connect({ brokers: ["k:1"], replyTopic: "replies" });
  const r = codeOf(client.next("a"));
  await vi.advanceTimersByTimeAsync(0);
  await reply(kafka.sends[0] as OutRecord[], "ERROR");
  expect(await r).toBe("UNKNOWN_SEQUENCE");
  await client.close();
});

test("brokers unreachable: the same record is sent again every 250 ms, answered once they are back", async () => {
  let failures = 3;
  kafka.onSend = () => (failures-- > 0 ? Promise.reject(new Error("Connection refused")) : Promise.resolve());
  const client = await IdClient.connect({ brokers: ["k:1"], replyTopic: "replies", timeoutMs: 5000 });
  const r = client.next("a", 2, { requestId: "r-1" });
  await vi.advanceTimersByTimeAsync(800);
  expect(kafka.sends).toHaveLength(4);
  const [first, ...again] = kafka.sends.map((s) => s[0] as OutRecord);
  for (const x of again) expect(x).toBe(first); // same requestId, same correlation id
  await reply([first as OutRecord]);
  expect((await r).numbers).toHaveLength(2);
  expect(vi.getTimerCount()).toBe(0);
  await client.close();
});

test("brokers unreachable until the timeout: CLIENT_SEND_FAILED with the attempts and the last error", async () => {
  kafka.onSend = () => Promise.reject(new Error("Connection refused"));
  const client = await IdClient.connect({ brokers: ["k:1"], replyTopic: "replies", timeoutMs: 1000 });
  const r = client.next("a").catch((e: unknown) => e);
  await vi.advanceTimersByTimeAsync(1000);
  const e = await r;
  expect(isIddError(e, "CLIENT_SEND_FAILED")).toBe(true);
  expect((e as Error).message).toMatch(/after 4 attempts: Connection refused/);
  expect(vi.getTimerCount()).toBe(0);
  await client.close();
});

test("a send that hangs past the timeout: CLIENT_SEND_FAILED at the timeout, not later", async () => {
  kafka.onSend = () => new Promise(() => {});
  const client = await IdClient.connect({ brokers: ["k:1"], replyTopic: "replies", timeoutMs: 1000 });
  const r = codeOf(client.next("a"));
  await vi.advanceTimersByTimeAsync(1000);
  expect(await r).toBe("CLIENT_SEND_FAILED");
  expect(vi.getTimerCount()).toBe(0);
  await client.close();
});

test("close fails pending requests with CLIENT_CLOSED, also those waiting to be resent, and later calls too", async () => {
  let fail = true;
  kafka.onSend = (records) => (fail && records.some((x) => x.key === "b") ? Promise.reject(new Error("down")) : Promise.resolve());
  const client = await IdClient.connect({ brokers: ["k:1"], replyTopic: "replies", timeoutMs: 10_000 });
  const sent = codeOf(client.next("a"));
  await vi.advanceTimersByTimeAsync(0);
  const resending = codeOf(client.next("b"));
  await vi.advanceTimersByTimeAsync(0); // failed once, waiting to be sent again
  const queued = codeOf(client.next("c")); // not sent yet
  fail = false;
  await client.close();
  expect([await sent, await resending, await queued]).toEqual(["CLIENT_CLOSED", "CLIENT_CLOSED", "CLIENT_CLOSED"]);
  expect(await codeOf(client.next("d"))).toBe("CLIENT_CLOSED");
  expect(vi.getTimerCount()).toBe(0);
  const before = kafka.sends.length;
  await vi.advanceTimersByTimeAsync(1000);
  expect(kafka.sends.length).toBe(before); // nothing sent after close
});

test("Avro replies: one registry lookup for a batch of them, each decoded to its numbers", async () => {
  registry.lookups = 0;
  registry.reply = replySchemaText;
  const client = await IdClient.connect({ brokers: ["k:1"], replyTopic: "replies", format: "avro", schemaRegistryUrl: "http://r" });
  const results = Array.from({ length: 50 }, () => client.next("a"));
  await vi.advanceTimersByTimeAsync(0);
  const records = kafka.sends.flat();
  expect(records[0]?.value[0]).toBe(0); // Confluent frame, the request schema's id after it
  const batch: Batch = {
    topic: "replies",
    partition: 0,
    records: records.map((r, i) => ({
      key: null,
      value: frame(9, replyType, {
        requestId: "x",
        sequence: "a",
        period: null,
        status: "OK",
        ranges: [{ first: BigInt(i + 1), last: BigInt(i + 1) }],
        formatted: [],
        error: null,
        issuedAt: 1n,
      }),
      headers: { kafka_correlationId: r.headers.kafka_correlationId as Buffer },
      offset: String(i),
    })),
  };
  const delivered = kafka.onBatch?.(batch, { heartbeat: async () => {}, isRunning: () => true, commit: async () => {} });
  await vi.advanceTimersByTimeAsync(0);
  await delivered;
  expect((await Promise.all(results)).map((r) => r.numbers[0])).toEqual(Array.from({ length: 50 }, (_, i) => BigInt(i + 1)));
  expect(registry.lookups).toBe(1);
  await client.close();
});
