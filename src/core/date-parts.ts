/** Date parts of an instant in an IANA time zone (24-hour clock, ASCII digits), as formats print them. */
import { IddError } from "./errors.js";

export const DATE_UNITS = ["yyyy", "yy", "MM", "dd", "HH", "mm", "ss"] as const;
export type DateUnit = (typeof DATE_UNITS)[number];
export type DateStrings = Readonly<Record<DateUnit, string>>;

/** The values each unit prints, as numbers (a year prints 4 digits: years 0000-9999). */
const DATE_RANGES: Readonly<Record<DateUnit, readonly [number, number]>> = {
  yyyy: [0, 9999],
  yy: [0, 99],
  MM: [1, 12],
  dd: [1, 31],
  HH: [0, 23],
  mm: [0, 59],
  ss: [0, 59],
};
const DIGITS = /^[0-9]+$/;

/** Whether a date part could print `text`: as many digits as the unit has letters, in the unit's range. */
export function isDateString(unit: DateUnit, text: string): boolean {
  if (text.length !== unit.length || !DIGITS.test(text)) return false;
  const [min, max] = DATE_RANGES[unit];
  const n = Number(text);
  return n >= min && n <= max;
}

/** Echoes of user text in problems are kept short. */
const show = (s: string) => (s.length > 40 ? `${s.slice(0, 40)}…` : s);

const dateFormatters = new Map<string, Intl.DateTimeFormat>();
const lastDates = new Map<string, { second: number; dates: DateStrings }>();

function dateFormatter(timeZone: string): Intl.DateTimeFormat {
  let f = dateFormatters.get(timeZone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat("en-US", {
        timeZone,
        hourCycle: "h23",
        numberingSystem: "latn",
        year: "numeric",
        month: "2-digit",
        day: "2-digit",
        hour: "2-digit",
        minute: "2-digit",
        second: "2-digit",
      });
    } catch (e) {
      throw new IddError("SEQUENCE_INVALID", `time zone "${show(timeZone)}" is not an IANA time zone`, { cause: e });
    }
    dateFormatters.set(timeZone, f);
  }
  return f;
}

/** The date parts of an instant in a time zone; the last second computed per zone is remembered. */
export function dateStrings(timeZone: string, epochMs: number): DateStrings {
  const second = Math.floor(epochMs / 1000);
  const last = lastDates.get(timeZone);
  if (last?.second === second) return last.dates;
  const parts = dateFormatter(timeZone).formatToParts(epochMs);
  const get = (t: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === t)?.value ?? "";
  const yyyy = get("year").padStart(4, "0");
  const dates: DateStrings = {
    yyyy,
    yy: yyyy.slice(-2),
    MM: get("month"),
    dd: get("day"),
    HH: get("hour") === "24" ? "00" : get("hour"),
    mm: get("minute"),
    ss: get("second"),
  };
  lastDates.set(timeZone, { second, dates });
  return dates;
}
