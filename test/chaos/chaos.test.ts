/**
 * The short fault-injection profile (harness.ts) as a test: its own stack on ports 31xxx (never the
 * shared services of the global setup), worker processes killed, paused, scaled; Redis lost and
 * replayed; MongoDB and the Kafka broker restarted; an open-loop burst and a stream of hostile
 * requests from a raw kafkajs producer — and still no duplicate, no order violation, every request
 * answered with numbers or a typed code (the burst's and the hostile stream's exactly once). One of
 * the sequences is obfuscated and one snowflake: their values are checked for uniqueness, the
 * snowflake ids also for order; one is gapless, and idd audit shows its series whole after every fault.
 *
 * Then the network profile (phases/split-brain.ts, link-faults.ts, clock-skew.ts; its CI version
 * `network-short`), in this file so that the two never load the
 * two cores at once (their latency checks would pay for it): on a stack of its own (.stack-network,
 * ports from IDD_NETWORK_PORT_BASE, default 27000, below the kernel's ephemeral ports), a packet-level partition of the Sentinel group
 * on loopback (stack/netfaults.ts) with half the workers on each side, ownership moving between the
 * sides, side A's remaining workers cut from Kafka for 14 s while they keep the old primary
 * (zombies), then the heal; then one worker of its own host cut from Redis and its Sentinels (a
 * silent link), and its wall clock 2 s slow, 10 s back, 1 h ahead while it owns the snowflake
 * sequence (the full profile, `npm run chaos -- --profile network`, adds its MongoDB and Kafka cuts
 * and 200 ± 100 ms on its Redis, then its Kafka link). Needs root (users, nftables); skipped otherwise.
 */
import { join } from "node:path";
import { expect, test } from "vitest";
import { REPO_ROOT } from "../../stack/paths.js";
import { runChaos } from "./harness.js";
import { formatReport } from "./report.js";

test("short chaos profile: no duplicate, causal order kept, every request accounted for, every fault recovered", async () => {
  const r = await runChaos({ profile: "short" });
  process.stderr.write(formatReport(r));
  expect(r.duplicates).toEqual([]);
  expect(r.orderViolations).toEqual([]);
  expect(r.gapViolations).toEqual([]); // every skipped number explained by MongoDB's audit log (G4)
  expect(r.auditDisagreements).toEqual([]); // idd audit, from MongoDB alone, agrees with the run's history (#21)
  expect(r.audits.some((a) => a.mode === "numbers" && a.answered > 0n)).toBe(true);
  expect(r.counters.every((c) => c.ungranted || c.gaps !== undefined)).toBe(true);
  // The obfuscated, the snowflake and the gapless sequence ran through every fault.
  expect(r.counters.filter((c) => c.ungranted && c.numbers > 0)).toHaveLength(3);
  // After every fault and at the end, idd audit showed the gapless series whole (test/chaos/gapless.ts).
  expect(r.gapless?.settled).toBeGreaterThan(0);
  expect(r.gapless?.disagreements).toEqual([]);
  expect(r.unaccounted).toEqual([]);
  expect(r.ok + r.typedErrors).toBe(r.requests);
  expect(r.unhandledRejections).toEqual([]);
  expect(r.unexpectedExits).toEqual([]);
  expect(r.zombies).toEqual([]); // workers alive but out of the consumer group serve nothing
  expect(r.unrecovered).toEqual([]);
  expect(r.notRun).toEqual([]);
  // The raw phases ran and passed their own checks: the burst answered once per request, every
  // hostile request dead-lettered or answered with its code, no consumer crash, fresh requests fast.
  expect(r.phaseFailures).toEqual([]);
  const overload = r.phases.find((p) => p.kind === "overload")?.overload;
  expect(overload?.missing).toBe(0);
  expect(overload?.duplicates).toBe(0);
  const hostile = r.phases.find((p) => p.kind === "hostile")?.hostile;
  expect(hostile).toBeDefined();
  for (const k of Object.values(hostile?.kinds ?? {})) expect(k.asExpected).toBe(k.sent);
  expect(r.numbers).toBeGreaterThan(0);
  expect(r.failures).toEqual([]);
}, 480_000);

const root = process.getuid?.() === 0;

test.skipIf(!root)(
  "network chaos profile: split brain with zombies, one worker cut from Redis, its clock stepped; no duplicate, order kept, every request accounted for",
  async () => {
    const r = await runChaos({
      profile: "network-short",
      stackDir: join(REPO_ROOT, ".stack-network"),
      portBase: Number(process.env.IDD_NETWORK_PORT_BASE ?? 27000),
    });
    process.stderr.write(formatReport(r));
    expect(r.duplicates).toEqual([]);
    expect(r.orderViolations).toEqual([]);
    expect(r.gapViolations).toEqual([]); // every skipped number explained by MongoDB's audit log (G4)
    expect(r.auditDisagreements).toEqual([]);
    expect(r.gapless?.settled).toBeGreaterThan(0);
    expect(r.gapless?.disagreements).toEqual([]);
    expect(r.unaccounted).toEqual([]);
    expect(r.ok + r.typedErrors).toBe(r.requests);
    expect(r.unhandledRejections).toEqual([]);
    expect(r.unexpectedExits).toEqual([]);
    expect(r.zombies).toEqual([]); // no wait on Redis or MongoDB cost a worker its group membership
    expect(r.unrecovered).toEqual([]);
    expect(r.notRun).toEqual([]);
    expect(r.phaseFailures).toEqual([]); // e.g. the clock-stepped worker owned the snowflake sequence
    expect(r.phases.map((p) => p.kind)).toEqual(["warmup", "split-brain", "redis-cut", "clock-skew"]);
    const clock = r.phases.find((p) => p.kind === "clock-skew");
    expect(
      clock?.notes.some((n) => /deadline-less requests .*: (\d+) sent, \1 with numbers/.test(n)),
      "every deadline-less request answered with numbers through the clock steps",
    ).toBe(true);
    const split = r.phases.find((p) => p.kind === "split-brain");
    expect(
      split?.notes.some((n) => n.includes("promoted")),
      "the Sentinels promoted Q during the partition",
    ).toBe(true);
    expect(
      split?.notes.some((n) => n.includes("cut from Kafka")),
      "side A's workers were zombies for a while",
    ).toBe(true);
    // Every request ended (numbers or a typed code) within the client's timeout and the hang margin.
    for (const p of r.phases) expect(p.maxWaitMs ?? 0, p.name).toBeLessThan(25_000);
    expect(r.numbers).toBeGreaterThan(0);
    expect(r.failures).toEqual([]);
  },
  600_000,
);
