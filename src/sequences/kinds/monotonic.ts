/** `monotonic`: one counter for ever, plain numbers. */
import type { MonotonicDef } from "../sequence-def.js";
import { NO_SETTINGS, noFields, refuseSettings, type SequenceKind } from "./kind.js";

export const monotonic: SequenceKind<MonotonicDef> = {
  name: "monotonic",
  summary: "never restarts; plain numbers",
  source: "counter",
  prints: false,
  settings(input, _existing, problems) {
    refuseSettings("monotonic", input, [], problems);
    return NO_SETTINGS;
  },
  refuse: noFields,
  present: () => [],
};
