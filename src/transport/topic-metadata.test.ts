import { afterEach, expect, test, vi } from "vitest";
import { TopicMetadata } from "./topic-metadata.js";

afterEach(() => {
  vi.restoreAllMocks();
});

test("unknown topics cost at most one metadata request per missRefreshMs; known ones none until the snapshot ages", async () => {
  let now = 0;
  let fetches = 0;
  const topics = new Map([["replies", 3]]);
  const m = new TopicMetadata(
    async () => {
      fetches++;
      return new Map(topics);
    },
    { ttlMs: 30_000, missRefreshMs: 1000, clock: () => now },
  );
  expect((await m.partitions([{ topic: "replies" }])).get("replies")).toBe(3);
  expect(fetches).toBe(1);
  for (let i = 0; i < 1000; i++) {
    now += 5; // 1,000 requests naming made-up topics over 5 s
    expect((await m.partitions([{ topic: `nowhere-${i}` }, { topic: "replies" }])).get(`nowhere-${i}`)).toBeUndefined();
  }
  expect(fetches).toBeLessThanOrEqual(1 + 5);
  topics.set("late", 1); // created meanwhile: seen within a second
  now += 1000;
  expect((await m.partitions([{ topic: "late" }])).get("late")).toBe(1);
  const before = fetches;
  expect((await m.partitions([{ topic: "replies", partition: 2 }])).get("replies")).toBe(3);
  expect(fetches).toBe(before); // known topic and partition: no request
});

test("brokers unreachable: the last snapshot keeps serving, and the next try waits a while", async () => {
  let now = 0;
  let up = true;
  let fetches = 0;
  const m = new TopicMetadata(
    async () => {
      fetches++;
      if (!up) throw new Error("connection refused");
      return new Map([["replies", 1]]);
    },
    { ttlMs: 30_000, missRefreshMs: 1000, clock: () => now },
  );
  await m.partitions([{ topic: "replies" }]);
  up = false;
  now += 31_000; // stale
  expect((await m.partitions([{ topic: "replies" }])).get("replies")).toBe(1);
  const failed = fetches;
  now += 10;
  await m.partitions([{ topic: "replies" }]);
  expect(fetches).toBe(failed); // not asked again at once
});

test("a topic created just after a refresh is not called unknown when the lookup needs a snapshot newer than its request", async () => {
  const topics = new Map([["old", 1]]);
  let fetches = 0;
  const m = new TopicMetadata(
    async () => {
      fetches++;
      return new Map(topics);
    },
    { missRefreshMs: 50 },
  );
  await m.partitions([{ topic: "old" }]);
  topics.set("fresh", 2); // a client creates its reply topic, then sends its first request
  const fetched = m.now();
  expect((await m.partitions([{ topic: "fresh" }])).get("fresh")).toBeUndefined(); // too soon to ask again
  const t0 = Date.now();
  expect((await m.partitions([{ topic: "fresh" }], fetched)).get("fresh")).toBe(2);
  expect(Date.now() - t0).toBeLessThan(1000);
  const n = fetches;
  expect((await m.partitions([{ topic: "gone" }], fetched)).get("gone")).toBeUndefined(); // the newer snapshot decides
  expect(fetches).toBe(n);
});

test("a wall clock stepped back an hour neither keeps the snapshot for the hour nor makes a lookup wait", async () => {
  let stepMs = 0;
  const realNow = Date.now;
  vi.spyOn(Date, "now").mockImplementation(() => realNow() + stepMs); // the process's wall clock, as libfaketime moves it
  const topics = new Map([["old", 1]]);
  let fetches = 0;
  const m = new TopicMetadata(
    async () => {
      fetches++;
      return new Map(topics);
    },
    { ttlMs: 60_000, missRefreshMs: 20 },
  );
  await m.partitions([{ topic: "old" }]);
  stepMs = -3_600_000; // NTP steps the clock back an hour
  topics.set("late", 1);
  await new Promise((r) => setTimeout(r, 40));
  expect((await m.partitions([{ topic: "late" }])).get("late")).toBe(1); // a miss past missRefreshMs asks again
  expect(fetches).toBe(2);
});
