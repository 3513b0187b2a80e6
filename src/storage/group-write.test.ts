import { expect, test } from "vitest";
import { GroupWrite } from "./group-write.js";

/** A write that answers when released, recording the groups it was given. */
function gatedWrite() {
  const groups: number[][] = [];
  const gates: (() => void)[] = [];
  const write = async (xs: number[]) => {
    groups.push(xs);
    await new Promise<void>((r) => gates.push(r));
    if (xs.includes(-1)) throw new Error("refused");
    return xs.map((x) => x * 10);
  };
  const release = async () => {
    while (gates.length === 0) await new Promise((r) => setImmediate(r));
    (gates.shift() as () => void)();
  };
  return { groups, write, release };
}

test("a lone write goes at once; writes asked for while it is in flight go together, in order", async () => {
  const g = gatedWrite();
  const w = new GroupWrite(g.write);
  const first = w.write(1);
  expect(g.groups).toEqual([[1]]);
  const rest = [2, 3, 4].map((x) => w.write(x));
  await g.release();
  expect(await first).toBe(10);
  await g.release();
  expect(await Promise.all(rest)).toEqual([20, 30, 40]);
  expect(g.groups).toEqual([[1], [2, 3, 4]]);
});

test("a failed write fails its own callers only; at most max inputs a write", async () => {
  const g = gatedWrite();
  const w = new GroupWrite(g.write, 2);
  const first = w.write(1);
  const failing = [w.write(-1), w.write(5)].map((p) => p.catch((e: Error) => e.message));
  const after = w.write(6);
  await g.release();
  await g.release();
  await g.release();
  expect(await first).toBe(10);
  expect(await Promise.all(failing)).toEqual(["refused", "refused"]);
  expect(await after).toBe(60);
  expect(g.groups).toEqual([[1], [-1, 5], [6]]);
});
