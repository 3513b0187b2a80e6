import { expect, test } from "vitest";
import { checkHistory, type Issued } from "./history.js";

const r = (first: number, last: number) => ({ first: BigInt(first), last: BigInt(last) });
const h = (ranges: ReturnType<typeof r>[], sentAt: number, receivedAt: number, sequence = "s"): Issued => ({
  sequence,
  period: null,
  ranges,
  sentAt,
  receivedAt,
});

test("the checker finds a duplicate and an order violation, and accepts a clean history", () => {
  expect(checkHistory([h([r(1, 5)], 0, 10), h([r(6, 6)], 11, 20), h([r(7, 9)], 5, 25)])).toEqual({
    numbers: 9,
    duplicates: [],
    orderViolations: [],
  });
  expect(checkHistory([h([r(1, 5)], 0, 10), h([r(5, 6)], 1, 20)]).duplicates).toHaveLength(1);
  // sent after [10, 12] was received, yet got smaller numbers: a G2 violation
  expect(checkHistory([h([r(10, 12)], 0, 10), h([r(3, 4)], 11, 20)]).orderViolations).toHaveLength(1);
  // concurrent requests may finish in any order
  expect(checkHistory([h([r(10, 12)], 0, 10), h([r(3, 4)], 5, 20)]).orderViolations).toHaveLength(0);
  // the same number in two sequences is fine
  expect(checkHistory([h([r(1, 1)], 0, 1, "a"), h([r(1, 1)], 0, 1, "b")]).duplicates).toHaveLength(0);
});
