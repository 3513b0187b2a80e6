import { expect, test } from "vitest";
import { Blocks } from "./blocks.js";

test("takes leave front first, merge adjacent blocks and say which blocks they used up", () => {
  const b = new Blocks();
  b.push({ first: 1n, last: 3n });
  b.push({ first: 4n, last: 5n }); // adjacent: one range out
  b.push({ first: 10n, last: 19n }); // a gap: another range
  let usedUp = 0;
  expect(b.take(2n, () => usedUp++)).toEqual([{ first: 1n, last: 2n }]);
  expect(b.take(5n, () => usedUp++)).toEqual([
    { first: 3n, last: 5n },
    { first: 10n, last: 11n },
  ]);
  expect(usedUp).toBe(2);
  expect(b.available).toBe(8n);
  expect(b.clear()).toEqual([{ first: 12n, last: 19n }]);
  expect(b.available).toBe(0n);
  expect(b.clear()).toEqual([]);
});
