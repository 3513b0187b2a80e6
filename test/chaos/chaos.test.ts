/**
 * The short fault-injection profile (harness.ts) as a test: its own stack on ports 31xxx (never the
 * shared services of the global setup), worker processes killed, paused, scaled; Redis lost and
 * replayed; MongoDB and the Kafka broker restarted — and still no duplicate, no order violation,
 * every request answered with numbers or a typed code.
 */
import { expect, test } from "vitest";
import { formatReport, runChaos } from "./harness.js";

test("short chaos profile: no duplicate, causal order kept, every request accounted for, every fault recovered", async () => {
  const r = await runChaos({ profile: "short" });
  process.stderr.write(formatReport(r));
  expect(r.duplicates).toEqual([]);
  expect(r.orderViolations).toEqual([]);
  expect(r.gapViolations).toEqual([]); // every skipped number explained by MongoDB's audit log (G4)
  expect(r.counters.every((c) => c.gaps !== undefined)).toBe(true);
  expect(r.unaccounted).toEqual([]);
  expect(r.ok + r.typedErrors).toBe(r.requests);
  expect(r.unhandledRejections).toEqual([]);
  expect(r.unexpectedExits).toEqual([]);
  expect(r.zombies).toEqual([]); // workers alive but out of the consumer group serve nothing
  expect(r.unrecovered).toEqual([]);
  expect(r.notRun).toEqual([]);
  expect(r.numbers).toBeGreaterThan(0);
  expect(r.failures).toEqual([]);
}, 360_000);
