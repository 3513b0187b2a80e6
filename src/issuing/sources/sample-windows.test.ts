import { expect, test } from "vitest";
import { FORECAST_WINDOWS, SampleWindows } from "./sample-windows.js";

test("the rate over the kept windows: none before the first, idle windows pull it to 0, old ones drop out", () => {
  const w = new SampleWindows();
  expect(w.perSecond).toBeNull();
  w.close(500, 100); // a counter made half-way through its first window
  expect(w.perSecond).toBe(200);
  w.close(1000, 100);
  expect(w.perSecond).toBe(200 / 1.5);
  for (let i = 0; i < FORECAST_WINDOWS; i++) w.close(1000, 0);
  expect(w.perSecond).toBe(0);
});
