import { afterEach, expect, test, vi } from "vitest";
import { type Producer, SendFailure } from "./kafka/index.js";
import { ReplySender } from "./reply-sender.js";
import { TopicMetadata } from "./topic-metadata.js";

afterEach(() => {
  vi.restoreAllMocks();
});

test("the retry window is on the monotonic clock: a wall clock stepped back an hour does not retry for the hour", async () => {
  let sends = 0;
  let stepMs = 0;
  const realNow = Date.now;
  vi.spyOn(Date, "now").mockImplementation(() => realNow() + stepMs); // the process's wall clock, as libfaketime moves it
  const producer = {
    sentTo: new Set(["replies"]),
    sendPartition: async () => {
      // The broker times out; after the first retry NTP steps the clock back an hour.
      if (++sends === 2) stepMs = -3_600_000;
      if (sends > 30) throw new SendFailure("destination", "TOPIC_AUTHORIZATION_FAILED", "ends a sender left retrying", undefined);
      throw new SendFailure("transient", "REQUEST_TIMED_OUT", "the broker did not answer", undefined);
    },
  } as unknown as Producer;
  const metadata = new TopicMetadata(async () => new Map([["replies", 1]]));
  const sender = new ReplySender(producer, metadata, { maxRecords: 100, maxBytes: 1 << 20, retryMs: 300, concurrency: 1 });
  const t0 = performance.now();
  const delivered = sender.deliver([{ topic: "replies", partition: 0, key: null, value: Buffer.from("x"), headers: {} }], async () => {});
  const late = new Promise<"still retrying">((r) => setTimeout(() => r("still retrying"), 3000).unref());
  const [failure] = (await Promise.race([delivered, late])) as Awaited<typeof delivered>;
  expect(failure?.code).toBe("REPLY_FAILED");
  expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
  expect(performance.now() - t0).toBeLessThan(2000);
});
