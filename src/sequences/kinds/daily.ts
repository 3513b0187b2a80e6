/** `daily`: restarts at `start` every calendar day of its time zone (UTC by default); plain numbers. */
import type { DailyDef } from "../sequence-def.js";
import { noFields, refuseSettings, type SequenceKind, UNFORMATTED, zoneSetting } from "./kind.js";

export const daily: SequenceKind<DailyDef> = {
  name: "daily",
  summary: "restarts at --start each calendar day of its --time-zone (default UTC); plain numbers, the day in `period`",
  source: "counter",
  prints: false,
  settings(input, existing, problems) {
    refuseSettings("daily", input, ["timeZone"], problems);
    return { timeZone: zoneSetting(input, existing, problems), period: "daily", ...UNFORMATTED };
  },
  refuse: noFields,
  present: () => [],
};
