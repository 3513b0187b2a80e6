/**
 * ops/prometheus/idd-rules.yml under `promtool`: the rules load, their unit tests
 * (idd-rules.test.yml) pass, and the tests can fail: for every rule, the same tests over the rules
 * with its threshold (or its `for`) changed fail, naming that alert. Needs no service; promtool is installed
 * on first use (Debian's prometheus package, stack/install.ts ensurePromtool).
 */
import { readFileSync } from "node:fs";
import { expect, test } from "vitest";
import { promtool, RULE_TESTS, RULES, rulesFolder } from "../support/promtool.js";

test("promtool check rules: every rule of ops/prometheus/idd-rules.yml loads", async () => {
  const r = await promtool(["check", "rules", RULES]);
  expect(r.output).toContain("SUCCESS: 9 rules found");
  expect(r.status).toBe(0);
}, 300_000);

test("promtool test rules: the rules' unit tests pass", async () => {
  const r = await promtool(["test", "rules", RULE_TESTS]);
  expect(r.output).toContain("SUCCESS");
  expect(r.status).toBe(0);
}, 300_000);

/** Each rule with one threshold (or `for`) changed, and the alert whose test must then fail. */
const WRONG: [from: string, to: string, alert: string][] = [
  ["idd_sequence_exhaustion_seconds < 86400", "idd_sequence_exhaustion_seconds < 8640", "IddSequenceExhaustionUnder1Day"],
  ["idd_sequence_exhaustion_seconds < 30 * 86400", "idd_sequence_exhaustion_seconds < 3 * 86400", "IddSequenceExhaustionUnder30Days"],
  ["idd_sequence_capacity_left_ratio < 0.1", "idd_sequence_capacity_left_ratio < 0.01", "IddSequenceCapacityLow"],
  ["idd_sequence_capacity_left == 0", "idd_sequence_capacity_left < 0", "IddSequenceExhausted"],
  ["            > 0.05", "            > 0.5", "IddErrorRateHigh"],
  ["(rate(idd_requests_refused_total[5m])) > 1", "(rate(idd_requests_refused_total[5m])) > 10", "IddRequestsRefused"],
  ["(increase(idd_dead_letters_total[10m])) > 0", "(increase(idd_dead_letters_total[10m])) > 5", "IddDeadLetters"],
  ["sum (rate(idd_requests_total[10m])) > 0.5", "sum (rate(idd_requests_total[10m])) > 0.7", "IddRequestsForwardedShareHigh"],
  ["expr: idd_ready == 0\n        for: 2m", "expr: idd_ready == 0\n        for: 5m", "IddWorkerNotReady"],
];

test.each(WRONG)(
  "a wrong threshold fails the tests: %s -> %s",
  async (from, to, alert) => {
    const rules = readFileSync(RULES, "utf8");
    const wrong = rules.replace(from, to);
    expect(wrong, `${from} is in the rules`).not.toBe(rules);
    const r = await promtool(["test", "rules", "tests.yml"], rulesFolder(readFileSync(RULE_TESTS, "utf8"), wrong));
    expect(r.output).toContain("FAILED");
    expect(r.output).toContain(`alertname: ${alert},`);
    expect(r.status).toBe(1);
  },
  300_000,
);
