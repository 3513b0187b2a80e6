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
  const m = new TopicMetadata(async () => new Map(topics), { missRefreshMs: 50 });
  await m.partitions([{ topic: "old" }]);
  topics.set("fresh", 2); // a client creates its reply topic, then sends its first request
  const fetched = m.now();
  expect((await m.partitions([{ topic: "fresh" }])).get("fresh")).toBeUndefined(); // too soon to ask again
  const t0 = Date.now();
  expect((await m.partitions([{ topic: "fresh" }], fetched)).get("fresh")).toBe(2);
  expect(Date.now() - t0).toBeLessThan(1000);
});

test("a broker that learns of a new topic a few snapshots late: the lookup waits for it; a topic that never comes is unknown after the grace, and at once for a while after", async () => {
  // What a KRaft broker does on a loaded machine: the topic's creation was acknowledged, and the
  // next metadata responses still lack it (here the first three after the create).
  const topics = new Map([["old", 1]]);
  let lagging = 0;
  let fetches = 0;
  const m = new TopicMetadata(
    async () => {
      fetches++;
      return lagging-- > 0 ? new Map([["old", 1]]) : new Map(topics);
    },
    { missRefreshMs: 50, graceMs: 400, rememberMs: 60_000 },
  );
  await m.partitions([{ topic: "old" }]);
  topics.set("fresh", 1);
  lagging = 3;
  const fetched = m.now();
  expect((await m.partitions([{ topic: "fresh" }], fetched)).get("fresh")).toBe(1);
  expect(fetches).toBe(5);

  const t0 = performance.now();
  expect((await m.partitions([{ topic: "typo" }], m.now())).get("typo")).toBeUndefined();
  const waited = performance.now() - t0;
  expect(waited).toBeGreaterThanOrEqual(390);
  expect(waited).toBeLessThan(1500); // the grace and a refresh or two, not more
  // Called unknown a moment ago: the next request naming it is judged on one fresh snapshot.
  const t1 = performance.now();
  expect((await m.partitions([{ topic: "typo" }], m.now())).get("typo")).toBeUndefined();
  expect(performance.now() - t1).toBeLessThan(300);
});

test("brokers unreachable while a lookup waits for a missing topic: it ends within the grace, not in a loop of requests", async () => {
  let up = true;
  let fetches = 0;
  const m = new TopicMetadata(
    async () => {
      fetches++;
      if (!up) throw new Error("connection refused");
      return new Map([["old", 1]]);
    },
    { missRefreshMs: 50, graceMs: 300 },
  );
  await m.partitions([{ topic: "old" }]);
  up = false;
  const t0 = performance.now();
  expect((await m.partitions([{ topic: "fresh" }], m.now())).get("fresh")).toBeUndefined();
  expect(performance.now() - t0).toBeLessThan(1000);
  expect(fetches).toBeLessThan(40); // at most one every 10 ms
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
