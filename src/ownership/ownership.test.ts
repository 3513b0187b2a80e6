import { expect, test } from "vitest";
import { IddError } from "../core/errors.js";
import type { RedisClient } from "../redis/client-type.js";
import { Scripts } from "../redis/scripts.js";
import { Ownership, type Revoked } from "./ownership.js";

/** Ownership over a fake takeOwner: gens 100, 101, …; with `inForce` > 1 (Redis's partition count), every take routing by 1 is stale. */
function ownership(inForce = 1) {
  let next = 100;
  const scripts = new Scripts(async (script) => {
    if (script !== "takeOwner") throw new Error(`unexpected ${script}`);
    return inForce > 1 ? inForce : [next++];
  });
  const o = new Ownership({} as RedisClient, "t", undefined, scripts);
  const heard: string[] = [];
  o.onRevoked((r: Revoked) => {
    heard.push(`${r.partition}:${r.why}:${[...r.sequences].join(",")}`);
    return BigInt(r.sequences.size);
  });
  return { o, heard };
}

test("a lease goes unowned → owned, keeps its gen under one count, and a new gen revokes what it held (retaken)", async () => {
  const { o, heard } = ownership();
  const lease = o.lease(0);
  expect(lease.state).toBe("unowned");
  expect(await o.take(lease, 1)).toEqual({ gen: 100, taken: true });
  expect(lease.state).toBe("owned");
  expect(heard).toEqual(["0:retaken:"]);
  lease.sequences.add("a");
  lease.fenced.add("a");
  expect(await o.take(lease, 1)).toEqual({ gen: 100, taken: false });
  expect(o.revoke(lease, "fenced")).toBe(1n);
  expect(lease).toMatchObject({ state: "revoked", gen: undefined });
  expect(lease.fenced.size).toBe(0);
  expect(await o.take(lease, 1)).toEqual({ gen: 101, taken: true });
  expect(heard).toEqual(["0:retaken:", "0:fenced:a", "0:retaken:a"]);
});

test("a take refused (ROUTE_STALE) leaves the lease as it was", async () => {
  const { o } = ownership(4);
  const lease = o.lease(2);
  await expect(o.take(lease, 1)).rejects.toSatisfy((e) => e instanceof IddError && e.code === "ROUTE_STALE");
  expect(lease.state).toBe("unowned");
});

test("losing partitions and a grown topic revoke leases, summing what the listeners gave up", async () => {
  const { o, heard } = ownership();
  o.assigned([0, 1]);
  o.lease(0).sequences.add("a");
  o.lease(1).sequences.add("b").add("c");
  expect(o.assigned([0])).toEqual({ lost: [1], dropped: 2n });
  expect(heard).toEqual(["1:partition-lost:b,c"]);
  expect(o.lease(1).sequences.size).toBe(0); // a new lease
  expect(o.routeBy(1)).toBe(0n); // unchanged
  expect(o.routeBy(2)).toBe(1n);
  expect(o.routedBy).toBe(2);
  expect(heard.at(-2)).toBe("0:partitions-grown:a");
  expect(o.lease(0).sequences.size).toBe(0);
});
