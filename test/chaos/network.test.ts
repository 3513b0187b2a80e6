/**
 * The network chaos profile (profiles.ts: `network`; harness.ts; phases/split-brain.ts) as a test,
 * on a stack of its own (folder .stack-network, ports from IDD_NETWORK_PORT_BASE, default 34000):
 * a packet-level partition of the Sentinel group on loopback (stack/netfaults.ts) with half the
 * workers on each side, ownership moving between the sides, side A's remaining workers cut from
 * Kafka for 14 s while they keep the old primary (zombies), then the heal. Under load from clients
 * half on librdkafka's default partitioner: no duplicate, no order violation, every request
 * answered with numbers or a typed code. Needs root (users, nftables); skipped otherwise.
 */
import { join } from "node:path";
import { expect, test } from "vitest";
import { REPO_ROOT } from "../../stack/paths.js";
import { runChaos } from "./harness.js";
import { formatReport } from "./report.js";

const root = process.getuid?.() === 0;

test.skipIf(!root)(
  "network chaos profile: a split brain of the Sentinel group with zombies; no duplicate, order kept, every request accounted for",
  async () => {
    const r = await runChaos({
      profile: "network",
      stackDir: join(REPO_ROOT, ".stack-network"),
      portBase: Number(process.env.IDD_NETWORK_PORT_BASE ?? 34000),
    });
    process.stderr.write(formatReport(r));
    expect(r.duplicates).toEqual([]);
    expect(r.orderViolations).toEqual([]);
    expect(r.unaccounted).toEqual([]);
    expect(r.ok + r.typedErrors).toBe(r.requests);
    expect(r.unhandledRejections).toEqual([]);
    expect(r.unexpectedExits).toEqual([]);
    expect(r.phases.map((p) => p.kind)).toEqual(["warmup", "split-brain"]);
    const split = r.phases.find((p) => p.kind === "split-brain");
    expect(
      split?.notes.some((n) => n.includes("promoted")),
      "the Sentinels promoted Q during the partition",
    ).toBe(true);
    expect(
      split?.notes.some((n) => n.includes("cut from Kafka")),
      "side A's workers were zombies for a while",
    ).toBe(true);
    expect(r.numbers).toBeGreaterThan(0);
    expect(r.failures).toEqual([]);
  },
  420_000,
);
