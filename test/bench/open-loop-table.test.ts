import { describe, expect, it } from "vitest";
import type { RunResult } from "./load-generator.js";
import type { Measured } from "./open-loop.js";
import { roundRatios } from "./open-loop-table.js";

/** A run of 100 answered requests, every one taking `ms`, in one second, on `cpu` CPU seconds. */
function run(scenario: string, target: string, ms: number, cpu = 1, missing = 0): Measured {
  const r: RunResult = {
    requests: 100,
    answered: 100 - missing,
    duplicates: 0,
    errors: 0,
    missing,
    numbers: 100 - missing,
    elapsedMs: 1000,
    publishMs: 1000,
    lagMs: 0,
    latencies: new Float64Array(100 - missing).fill(ms),
  };
  return { scenario, target, r, cpu: { target: cpu, broker: undefined, deps: undefined, generator: 0 } };
}

describe("roundRatios", () => {
  it("gives each ratio's median and range over a scenario's rounds", () => {
    const results = [
      run("paced 4000/s", "echo-rdk", 10),
      run("paced 4000/s", "idd", 20, 2),
      run("paced 4000/s #2", "idd", 100, 3),
      run("paced 4000/s #2", "echo-rdk", 10),
      run("paced 4000/s #3", "echo-rdk", 10),
      run("paced 4000/s #3", "idd", 30, 4),
    ];
    const [r, ...more] = roundRatios(results);
    expect(more).toEqual([]);
    expect(r).toMatchObject({ scenario: "paced 4000/s", pair: "idd/echo-rdk", rounds: 3 });
    expect(r?.p50).toEqual({ median: 3, min: 2, max: 10 });
    expect(r?.p99).toEqual({ median: 3, min: 2, max: 10 });
    expect(r?.reqPerS).toEqual({ median: 1, min: 1, max: 1 });
    expect(r?.cpuTarget).toEqual({ median: 3, min: 2, max: 4 });
  });

  it("leaves out rounds with unanswered requests, and scenarios run once", () => {
    const results = [
      run("burst 100k", "echo-rdk", 10),
      run("burst 100k", "idd", 20),
      run("paced 4000/s", "echo-rdk", 10),
      run("paced 4000/s", "idd", 20),
      run("paced 4000/s #2", "echo-rdk", 10),
      run("paced 4000/s #2", "idd", 40),
      run("paced 4000/s #3", "echo-rdk", 10),
      run("paced 4000/s #3", "idd", 500, 1, 3),
    ];
    const rows = roundRatios(results);
    expect(rows.map((r) => [r.scenario, r.rounds])).toEqual([["paced 4000/s", 2]]);
    expect(rows[0]?.p50).toEqual({ median: 3, min: 2, max: 4 });
  });
});
