/** `monotonic`: one counter for ever, plain numbers. */
import { noFields, refuseSettings, type SequenceKind, UNFORMATTED } from "./kind.js";

export const monotonic: SequenceKind = {
  name: "monotonic",
  summary: "never restarts; plain numbers",
  source: "counter",
  settings(input, _existing, problems) {
    refuseSettings("monotonic", input, [], problems);
    return { timeZone: null, period: "never", ...UNFORMATTED };
  },
  refuse: noFields,
  present: () => [],
};
