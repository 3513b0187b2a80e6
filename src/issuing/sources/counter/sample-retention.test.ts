import pino from "pino";
import { expect, test } from "vitest";
import { SampleRetention } from "./sample-retention.js";

const DAY = 86_400_000;
const at = (iso: string) => Date.parse(iso);

function retention(now: { t: number }, days = 7) {
  const deleted: string[][] = [];
  const r = new SampleRetention({
    store: {
      deleteSampleDays: async (d) => {
        deleted.push([...d]);
        return d.length;
      },
    },
    retentionDays: days,
    clock: () => now.t,
    logger: pino({ level: "silent" }),
  });
  return { r, deleted };
}

test("the first run deletes a year of days wholly past the retention; later runs only the days that aged out since", async () => {
  const now = { t: at("2026-03-20T10:00:00Z") };
  const { r, deleted } = retention(now);
  await r.run();
  expect(deleted).toEqual([]); // not leading: another worker prunes
  r.lead(true);
  await r.run();
  const first = deleted[0] as string[];
  expect(first.at(-1)).toBe("2026-03-12"); // 03-13 holds samples younger than 7 days: kept whole
  expect(first[0]).toBe("2025-03-11"); // a year (366 days) before that
  expect(first.length).toBe(367);
  now.t += DAY / 2;
  await r.run(); // the same day: nothing new to delete
  expect(deleted.length).toBe(1);
  now.t += 2 * DAY;
  await r.run();
  expect(deleted[1]).toEqual(["2026-03-13", "2026-03-14"]);
});

test("a failed deletion is tried again from the same day", async () => {
  const now = { t: at("2026-03-20T10:00:00Z") };
  let fail = true;
  const asked: string[][] = [];
  const r = new SampleRetention({
    store: {
      deleteSampleDays: async (d) => {
        asked.push([...d]);
        if (fail) throw new Error("MongoDB busy");
        return 0;
      },
    },
    retentionDays: 1,
    clock: () => now.t,
    logger: pino({ level: "silent" }),
  });
  r.lead(true);
  await r.run();
  fail = false;
  await r.run();
  expect(asked[1]).toEqual(asked[0]);
  expect(asked[0]?.at(-1)).toBe("2026-03-18");
});
