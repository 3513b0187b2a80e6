/**
 * Gapless capacity forecasts on the real Redis and MongoDB (FerretDB on the stack): a dispenser's
 * forecast says what MongoDB holds — the max value minus the highest number taken, also after a
 * zombie writer took numbers above what the dispenser knew — and `idd seq show`'s line reads the
 * same from MongoDB's high mark, with the rate from the samples the dispenser's allocator appended;
 * at the max value both say it has run out.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { forecastLines } from "../../../../src/cli/commands/seq-forecast.js";
import type { Config } from "../../../../src/config/config.js";
import { GaplessForecasts } from "../../../../src/issuing/sources/gapless/gapless-forecast.js";
import { type GaplessDef, GaplessSource } from "../../../../src/issuing/sources/gapless/gapless-source.js";
import { defineSequence } from "../../../../src/sequences/definition.js";
import { beat, DispenserRig, numbersOf, request } from "../../../support/dispenser-rig.js";
import { waitFor } from "../../../support/wait.js";

const services = inject("services");
const rig = new DispenserRig(services, "gapless_forecast");
// What seq show reads of the configuration: the services (a counter's forecast asks Redis) and the sample window.
const config = { services, sampleMs: 10_000 } as Config;

beforeAll(() => rig.store.ensureIndexes());
afterAll(() => rig.close());

/** The highest number MongoDB holds of the sequence, read directly. */
const highestIn = async (name: string) => (await rig.queries.gaplessOf(name)).map((r) => r.number).reduce((a, b) => (b > a ? b : a), 0n);
const wordsOf = (line: string) => Object.fromEntries([...line.matchAll(/(\S+)=("[^"]*"|\S+)/g)].map((m) => [m[1], m[2]]));

test("the dispenser's forecast and seq show's are MongoDB's high mark under the max value, zombie or not, down to run out", async () => {
  const name = `gf-${randomUUID().slice(0, 8)}`;
  // Serials 900..999 of INV{seq:3}: 100 numbers, bound seq-width.
  const def = defineSequence({ name, kind: "formatted", format: "INV{seq:3}", start: 900, gapless: true }, new Date());
  await rig.store.createSequence(def);
  const forecasts = new GaplessForecasts();
  const { d, allocator } = rig.dispenser({ topic: `t-${randomUUID()}`, gaplessForecasts: forecasts });
  const forecastOf = () => forecasts.forecasts().find((f) => f.sequence === name)?.forecast;

  expect(forecastOf()).toBeUndefined(); // none before this worker took a number
  expect(numbersOf(await d.answer(0, [request(name, 20), request(name, 5)], beat))).toHaveLength(25);
  expect(await highestIn(name)).toBe(924n);
  expect([forecastOf()?.bound, forecastOf()?.left, forecastOf()?.total]).toEqual(["seq-width", 75, 100]);

  // A zombie owner inserts 925..934 behind the dispenser's back: its next insert is refused at
  // 925, finds the highest again and takes 935.., and its forecast counts what the zombie took.
  await new GaplessSource(rig.store, "zombie").issue([{ def: def as GaplessDef, period: null, count: 10, requestId: "", now: Date.now() }]);
  expect(numbersOf(await d.answer(0, [request(name, 15)], beat))[0]).toBe(935n);
  expect(await highestIn(name)).toBe(949n);
  expect(forecastOf()?.left).toBe(50);

  // The window closes with the allocator's sample and goes to `samples`: seq show's rate.
  allocator.sample();
  const shown = await waitFor("seq show's rate from the gapless samples", async () => {
    const [line] = await forecastLines(def, rig.store, config);
    const w = wordsOf(line as string);
    return w.rate !== "0.00/s" && w;
  });
  expect([shown.period, shown.bound, shown.left]).toEqual(["-", "seq-width", "50"]);
  expect(Number.parseFloat(shown.rate as string)).toBeGreaterThan(0);
  expect(shown["runs-out"]).toMatch(/^"in /);

  // Up to the max value: 50 more, then refused; both forecasts say run out.
  expect(numbersOf(await d.answer(0, [request(name, 50)], beat)).at(-1)).toBe(999n);
  expect((await d.answer(0, [request(name, 1)], beat))[0]?.error?.code).toBe("SEQUENCE_EXHAUSTED");
  expect([forecastOf()?.left, forecastOf()?.exhaustionSeconds]).toEqual([0, 0]);
  const [last] = await forecastLines(def, rig.store, config);
  expect(wordsOf(last as string)).toMatchObject({ left: "0", "runs-out": '"RUN OUT"' });
});
