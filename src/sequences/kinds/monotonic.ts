/** `monotonic`: one counter for ever, plain numbers. */
import { refuseSettings, type SequenceKind } from "./kind.js";

export const monotonic: SequenceKind = {
  name: "monotonic",
  summary: "never restarts; plain numbers",
  source: "counter",
  settings(input, _existing, problems) {
    refuseSettings("monotonic", input, ["timeZone", "period"], problems);
    return { timeZone: null, period: "never" };
  },
  present: () => [],
};
