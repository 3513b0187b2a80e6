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
    release: () => reads.shift()?.(),
    getSequence: (_name: string) => {
      const seen = stored;
      return new Promise<SequenceDef | undefined>((resolve) => reads.push(() => resolve(seen)));
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
  store.release();
  expect((await first)?.obfuscation?.keyVersion).toBe(1);
  const stale = cache.get("rot"); // expired (ttl 0): served now, a read of v1 begins in the background
  expect((await stale)?.obfuscation?.keyVersion).toBe(1);
  store.update(v2);
  cache.remember(v2);
  store.release(); // the background read ends with v1
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
      createSequence: async () => {},
    };
    const cache = new SequenceCache(store, { ttlMs: 50, clock: Date.now }); // as the worker makes it
    await cache.get("ttl");
    expect(reads).toBe(1);
    step = -3_600_000; // NTP stepped the clock back an hour
    await new Promise((r) => setTimeout(r, 80)); // past the TTL, really
    await cache.get("ttl"); // stale: served, and read again in the background
    expect(reads).toBe(2);
  } finally {
    Date.now = realNow;
  }
});
