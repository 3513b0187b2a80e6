import { expect, test } from "vitest";
import { isIddError } from "../core/errors.js";
import { readSequenceFile } from "./sequence-file.js";

const now = new Date("2026-11-28T00:00:00Z");

test("JSON lines: one definition per line, the command's options as defaults, blank lines skipped", () => {
  const defs = readSequenceFile(
    ['{"name":"t-1"}', "", '{"name":"t-2","start":"500","max-value":900}', '{"name":"t-3","timeZone":"Asia/Tokyo"}'].join("\n"),
    { kind: "daily", timeZone: "Asia/Shanghai" },
    now,
  );
  expect(defs.map((d) => [d.name, d.kind, d.start, d.maxValue < 1000n ? d.maxValue : "max", d.timeZone])).toEqual([
    ["t-1", "daily", 1n, "max", "Asia/Shanghai"],
    ["t-2", "daily", 500n, 900n, "Asia/Shanghai"],
    ["t-3", "daily", 1n, "max", "Asia/Tokyo"],
  ]);
});

test("CSV: a header row, quoted cells with commas and quotes, empty cells left to the defaults, CRLF", () => {
  const defs = readSequenceFile(
    'name,kind,format,audit\r\ninv-a,formatted,"INV-{yy}{MM}-{seq:6}",true\r\ninv-b,,,\r\nquoted,formatted,"A,""B""-{seq:4}",false\r\n',
    { kind: "formatted", format: "X-{seq:3}" },
    now,
    "tenants.csv",
  ).map((d) => [d.name, d.kind, d.format, d.audit]);
  expect(defs).toEqual([
    ["inv-a", "formatted", "INV-{yy}{MM}-{seq:6}", true],
    ["inv-b", "formatted", "X-{seq:3}", false],
    ["quoted", "formatted", 'A,"B"-{seq:4}', false],
  ]);
});

test("every bad line is reported with its number, and the file is refused whole", () => {
  const text = ["name,kind,start", "ok-1,monotonic,1", "bad name,monotonic,1", "ok-2,weekly,1", "ok-1,monotonic,2", "ok-3,monotonic"].join(
    "\n",
  );
  let thrown: unknown;
  try {
    readSequenceFile(text, {}, now, "f.csv");
  } catch (e) {
    thrown = e;
  }
  expect(isIddError(thrown, "SEQUENCE_INVALID")).toBe(true);
  const lines = (thrown as Error).message.split("\n");
  expect(lines[0]).toBe("f.csv: 4 of 5 lines are not sequence definitions; nothing was created:");
  expect(lines.slice(1).map((l) => l.slice(0, l.indexOf(":")))).toEqual(['line 3 ("bad name")', 'line 4 ("ok-2")', "line 5", "line 6"]);
  expect(lines[1]).toContain("name must be 1-64 characters");
  expect(lines[2]).toContain("kind must be one of");
  expect(lines[3]).toBe('line 5: "ok-1" is defined on line 2 already');
  expect(lines[4]).toBe("line 6: 2 cells where the header names 3");
});

test("unknown fields, non-objects, non-boolean flags and an empty file are refused", () => {
  const msg = (text: string) => {
    try {
      readSequenceFile(text, {}, now);
      return "";
    } catch (e) {
      return (e as Error).message;
    }
  };
  expect(msg('{"name":"a","colour":"red"}')).toContain('line 1: unknown field "colour"');
  expect(msg('{"name":"a"}\n[1,2]')).toContain("line 2: not a JSON object");
  expect(msg('{"name":"a","audit":"yes"}')).toContain("line 1: audit must be true or false");
  expect(msg('{"kind":"daily"}')).toContain("line 1: no name");
  expect(msg("name\n")).toBe("the file defines no sequence");
});

test("a long list of problems is cut after 20, saying how many more", () => {
  const text = ["name", ...Array.from({ length: 30 }, (_, i) => `bad name ${i}`)].join("\n");
  expect(() => readSequenceFile(text, {}, now)).toThrow(/… and 10 more$/);
});
