/**
 * `npx tsx test/bench/format.ts`: how fast formatted serial numbers render (no services). Per template:
 * binding a format to a request (dates and fields; a new second each time, so Intl runs every time),
 * and rendering 100,000 serials with one binding (overflow widen: {seq:5} prints 100000 whole).
 */
import { compileFormat, formatterFor } from "../../src/sequences/format.js";

const SERIALS = 100_000;
const REQUESTS = 20_000;
const say = (s: string) => process.stdout.write(`${s}\n`);
const templates = [
  "QJ{seq:6}",
  "{yyyy}{MM}{dd}{seq:5}",
  "{field:area}-{field:unit}-{seq:5}",
  "INV-{yy}{MM}-{seq:6}{check:damm}",
  "{yyyy}{MM}{dd}{HH}{mm}{ss}{seq:10}{check:mod97-10}",
];
const fields = { area: "010", unit: "6541" };
const t0 = Date.parse("2026-11-21T16:30:00Z");

function time(f: () => void): number {
  f(); // warm up
  const start = process.hrtime.bigint();
  f();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

for (const template of templates) {
  const format = compileFormat(template);
  const useFields = format.fields.size > 0 ? fields : undefined;
  let sink = 0; // characters rendered, printed so the work cannot be optimised away
  const bindMs = time(() => {
    for (let i = 0; i < REQUESTS; i++)
      sink += formatterFor(format, { epochMs: t0 + i * 1000, timeZone: "Asia/Shanghai", fields: useFields })(1n).length;
  });
  const render = formatterFor(format, { epochMs: t0, timeZone: "Asia/Shanghai", fields: useFields, overflow: "widen" });
  const renderMs = time(() => {
    for (let i = 1; i <= SERIALS; i++) sink += render(BigInt(i)).length;
  });
  say(
    `${template.padEnd(52)} bind ${((bindMs * 1000) / REQUESTS).toFixed(2)} µs/request   render ${renderMs.toFixed(1)} ms/100k (${((renderMs * 1e6) / SERIALS).toFixed(0)} ns/serial; ${sink} characters)`,
  );
}
