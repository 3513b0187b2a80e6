import { expect, test } from "vitest";
import { BlockSizer, Rate } from "./block-sizer.js";

test("blocks grow when they run out fast, shrink when they last long, within bounds", () => {
  const s = new BlockSizer({ minBlock: 10, maxBlock: 80, initialBlock: 20, targetBlockMs: 1000 });
  s.blockUsed(100);
  expect(s.size).toBe(40);
  s.blockUsed(100);
  s.blockUsed(100);
  expect(s.size).toBe(80); // capped
  s.blockUsed(1000); // on target: unchanged
  expect(s.size).toBe(80);
  for (let i = 0; i < 5; i++) s.blockUsed(5000);
  expect(s.size).toBe(10); // floored
});

test("the rate converges to a steady consumption", () => {
  const r = new Rate(0, 1000);
  for (let t = 100; t <= 20_000; t += 100) r.add(50, t); // 500 per second
  expect(r.perSecond).toBeGreaterThan(490);
  expect(r.perSecond).toBeLessThan(510);
});
