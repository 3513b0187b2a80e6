import { describe, expect, test } from "vitest";
import { IddError } from "../../../core/errors.js";
import { type ClaimRefused, type ClaimSteps, claimLoop } from "./claim-loop.js";

const refused = (r: ClaimRefused["refused"]): ClaimRefused => ({ refused: r, error: new IddError("REDIS_FENCED", r) });

/** Steps whose attempts answer `outcomes` in turn; the log says what the loop did. */
function steps(outcomes: ("granted" | ClaimRefused["refused"])[], o: { stale?: number } = {}): ClaimSteps & { log: string[] } {
  const log: string[] = [];
  return {
    log,
    attempt: async () => {
      const next = outcomes.shift() ?? "granted";
      log.push(`attempt:${next}`);
      return next === "granted" ? "granted" : refused(next);
    },
    raise: async () => void log.push("raise"),
    restore: async (stale) => void log.push(stale === undefined ? "restore" : `restore:${stale}`),
    staleEpoch: async () => {
      log.push("staleEpoch");
      return o.stale;
    },
    sleep: async () => void log.push("sleep"),
  };
}

describe("claimLoop", () => {
  test("raises after exhausted, restores after missing or suspect, then is granted", async () => {
    const s = steps(["exhausted", "missing", "suspect"]);
    await claimLoop(s);
    expect(s.log).toEqual(["attempt:exhausted", "raise", "attempt:missing", "restore", "attempt:suspect", "restore", "attempt:granted"]);
  });

  test("fenced: restores under the stale epoch when Redis holds one MongoDB superseded, else waits", async () => {
    const stale = steps(["fenced"], { stale: 3 });
    await claimLoop(stale);
    expect(stale.log).toEqual(["attempt:fenced", "staleEpoch", "restore:3", "attempt:granted"]);
    const restoring = steps(["stale"]);
    await claimLoop(restoring);
    expect(restoring.log).toEqual(["attempt:stale", "staleEpoch", "sleep", "attempt:granted"]);
  });

  test("superseded leaves at once; a refusal tried too often leaves with its error", async () => {
    await expect(claimLoop(steps(["superseded"]))).rejects.toMatchObject({ message: "superseded" });
    const abandoned = steps(["abandoned", "abandoned", "abandoned", "abandoned"]);
    await expect(claimLoop(abandoned)).rejects.toMatchObject({ message: "abandoned" });
    expect(abandoned.log.filter((l) => l.startsWith("attempt"))).toHaveLength(4);
  });
});
