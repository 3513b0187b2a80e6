import { expect, test } from "vitest";
import { SequenceCache } from "./cache.js";
import { defineSequence, type SequenceDef } from "./definition.js";

/** A store whose reads wait until the test lets each go, with what the store held when the read began. */
function slowStore(initial: SequenceDef) {
  let stored = initial;
  const reads: (() => void)[] = [];
  return {
    update: (def: SequenceDef) => {
      stored = def;
    },
    /** Lets the oldest read go, once the cache has sent the reads it queued. */
    release: async () => {
      await new Promise((r) => setTimeout(r, 5));
      reads.shift()?.();
    },
    getSequence: async () => stored,
    getSequences: (_names: string[]) => {
      const seen = stored;
      return new Promise<Map<string, SequenceDef>>((resolve) => reads.push(() => resolve(new Map([[seen.name, seen]]))));
    },
    createSequence: async () => {},
  };
}

test("a read begun before a newer definition was remembered does not put the older one back", async () => {
  const v1 = defineSequence({ name: "rot", kind: "obfuscated", digits: 7 }, new Date(1000));
  const v2 = defineSequence({ name: "rot", keyVersion: 2 }, new Date(2000), v1);
  const store = slowStore(v1);
  const cache = new SequenceCache(store, { ttlMs: 0, clock: () => 5000 });
  const first = cache.get("rot");
  await store.release();
  expect((await first)?.obfuscation?.keyVersion).toBe(1);
  const stale = cache.get("rot"); // expired (ttl 0): served now, a read of v1 begins in the background
  expect((await stale)?.obfuscation?.keyVersion).toBe(1);
  store.update(v2);
  cache.remember(v2);
  await store.release(); // the background read ends with v1
  await new Promise((r) => setTimeout(r, 0));
  expect(cache.peek("rot")?.obfuscation?.keyVersion).toBe(2);
});

test("the TTL runs on the monotonic clock: a wall clock stepped back an hour does not keep a definition cached for that hour", async () => {
  const realNow = Date.now;
  let step = 0;
  Date.now = () => realNow() + step;
  try {
    const v1 = defineSequence({ name: "ttl", kind: "obfuscated", digits: 7 }, new Date(1000));
    let reads = 0;
    const store = {
      getSequence: async () => {
        reads++;
        return v1;
      },
      getSequences: async () => {
        reads++;
        return new Map([["ttl", v1]]);
      },
      createSequence: async () => {},
    };
    const cache = new SequenceCache(store, { ttlMs: 50, clock: Date.now }); // as the worker makes it
    await cache.get("ttl");
    expect(reads).toBe(1);
    step = -3_600_000; // NTP stepped the clock back an hour
    await new Promise((r) => setTimeout(r, 80)); // past the TTL, really
    await cache.get("ttl"); // stale: served, and read again in the background (after the refreshes' window, 12.5 ms)
    await new Promise((r) => setTimeout(r, 40));
    expect(reads).toBe(2);
  } finally {
    Date.now = realNow;
  }
});

test("names not cached are read one by one; expired ones are refreshed in one query, with those due within half their TTL", async () => {
  let now = 0;
  const queries: string[][] = [];
  const defs = new Map(["a", "b", "c", "d"].map((n) => [n, defineSequence({ name: n }, new Date(1000))]));
  const store = {
    getSequence: async (name: string) => {
      queries.push([name]);
      return defs.get(name);
    },
    getSequences: async (names: string[]) => {
      queries.push([...names].sort());
      return new Map(names.flatMap((n) => (defs.has(n) ? [[n, defs.get(n) as SequenceDef] as const] : [])));
    },
    createSequence: async () => {},
  };
  const cache = new SequenceCache(store, { ttlMs: 40, clock: () => 0, monotonic: () => now }); // refreshes wait 10 ms
  const window = () => new Promise((r) => setTimeout(r, 30));
  const got = await Promise.all(["a", "b", "c", "nope"].map((n) => cache.get(n)));
  expect(got.map((d) => d?.name)).toEqual(["a", "b", "c", undefined]);
  expect(queries).toEqual([["a"], ["b"], ["c"], ["nope"]]);
  queries.length = 0;
  now = 24;
  expect((await cache.get("d"))?.name).toBe("d");
  now = 48; // a, b and c expired; d is due within half its TTL; the miss is asked again only when asked for
  expect(cache.peek("a")?.name).toBe("a"); // served stale, refreshed in the background
  expect(cache.peek("b")?.name).toBe("b");
  expect(queries).toEqual([["d"]]); // not yet: the refreshes wait for the window
  await window();
  expect(queries).toEqual([["d"], ["a", "b", "c", "d"]]);
  now = 84; // all four were read again at 48: fresh
  expect(cache.peek("c")?.name).toBe("c");
  await window();
  expect(queries).toHaveLength(2);
});
