import { expect, test } from "vitest";
import { inForce } from "./reservation-in-force.js";

test("the reservation in force is the highest max and the highest epoch recorded, in any order", () => {
  const records = [
    { max: 1000n, epoch: 1 },
    { max: 3000n, epoch: 1 },
    { max: 2000n, epoch: 2 },
  ];
  expect(records.reduce<ReturnType<typeof inForce> | undefined>(inForce, undefined)).toEqual({ max: 3000n, epoch: 2 });
  expect([...records].reverse().reduce<ReturnType<typeof inForce> | undefined>(inForce, undefined)).toEqual({
    max: 3000n,
    epoch: 2,
  });
  expect(inForce(undefined, { max: -1n, epoch: 0 })).toEqual({ max: -1n, epoch: 0 });
});
