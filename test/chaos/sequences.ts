/** The sequences a chaos run loads: monotonic and daily counters, one obfuscated, one snowflake, one gapless. */
import { defineSequence } from "../../src/sequences/definition.js";
import type { Store } from "../../src/storage/store.js";
import { GAPLESS_CONFIRM_TIMEOUT_MS } from "./gapless.js";

export interface ChaosSequences {
  names: string[];
  /** How many of the counters are daily. */
  daily: number;
  /** Sequences checked for uniqueness only (no G2), and those without blocks to check gaps against (no G4). */
  unordered: Set<string>;
  ungranted: Set<string>;
  /** The gapless sequence, loaded apart (test/chaos/gapless.ts): not in `names`. */
  gapless: string;
  snowflake: string;
  /** The daily sequence homed with the snowflake sequence (MidnightSequence), when asked for. */
  midnight?: string;
  /** The daily sequences' time zones. */
  zones: string[];
}

/**
 * The network profile's clock faults: one more daily sequence, in `zone` (where midnight falls while
 * a worker's clock runs ahead), named so that `home` gives it the same home partition as the
 * snowflake sequence: the worker whose clock is stepped decides its periods.
 */
export interface MidnightSequence {
  zone: string;
  home: (sequence: string) => number;
}

/** A fixed-offset zone (Etc/GMT±h) whose local time is in the 23rd hour at `at` (Unix ms). */
export function zoneBeforeMidnight(at: number): string {
  let h = 23 - new Date(at).getUTCHours(); // UTC+h
  if (h > 14) h -= 24;
  if (h < -12) h += 24;
  // The Etc zones' signs are POSIX's: Etc/GMT-9 is UTC+9.
  return h === 0 ? "Etc/GMT" : `Etc/GMT${h > 0 ? "-" : "+"}${Math.abs(h)}`;
}

/**
 * `n` counters (of every 5, 3 monotonic and 2 daily in far-apart time zones), then an obfuscated and a
 * snowflake sequence. Every other counter logs its grants strictly, and the first is audited (its
 * answers recorded, `idd audit` walks it number by number): test/chaos/audit-check.ts compares the
 * audit's verdicts with the run's history for both grant logs.
 */
export async function createSequences(store: Store, run: string, n: number, midnight?: MidnightSequence): Promise<ChaosSequences> {
  const names: string[] = [];
  const zones = ["Asia/Shanghai", "America/New_York", "Pacific/Kiritimati", "Pacific/Pago_Pago"];
  const dailyZones: string[] = [];
  let daily = 0;
  for (let i = 0; i < n; i++) {
    const isDaily = i % 5 >= 3; // 6 monotonic, 4 daily out of 10
    if (isDaily) daily++;
    const name = `chaos-${run}-${isDaily ? "d" : "m"}${i}`;
    await store.createSequence(
      defineSequence(
        {
          name,
          kind: isDaily ? "daily" : "monotonic",
          start: i % 2 ? 1_000_000 : 1,
          ...(i % 2 === 0 && { grantLog: "strict" as const }),
          ...(i === 0 && { audit: true }),
          ...(isDaily && { timeZone: zones[i % zones.length] }),
        },
        new Date(),
      ),
    );
    names.push(name);
    if (isDaily) dailyZones.push(zones[i % zones.length] as string);
  }
  // An obfuscated and a snowflake sequence: both checked for uniqueness (G1); the snowflake ids
  // also for causal order (G2: a partition's next owner issues above the last id answered).
  // Obfuscated values are unordered by design; neither has gaps to explain against the grants.
  const obfuscated = `chaos-${run}-o${n}`;
  const snowflake = `chaos-${run}-s${n + 1}`;
  let midnightName: string | undefined;
  if (midnight) {
    let name = `chaos-${run}-d${n + 3}`;
    for (let k = 0; midnight.home(name) !== midnight.home(snowflake); k++) name = `chaos-${run}-d${n + 3}x${k}`;
    await store.createSequence(defineSequence({ name, kind: "daily", timeZone: midnight.zone }, new Date()));
    names.push(name);
    midnightName = name;
    dailyZones.push(midnight.zone);
    daily++;
  }
  await store.createSequence(defineSequence({ name: obfuscated, kind: "obfuscated", digits: 12 }, new Date()));
  await store.createSequence(defineSequence({ name: snowflake, kind: "snowflake" }, new Date()));
  names.push(obfuscated, snowflake);
  // Gapless: its numbers come from MongoDB, not blocks (no grants to check gaps against: idd audit
  // shows where each went); ordered and unique like any counter.
  const gapless = `chaos-${run}-g${n + 2}`;
  await store.createSequence(
    defineSequence({ name: gapless, kind: "monotonic", gapless: true, confirmTimeout: `${GAPLESS_CONFIRM_TIMEOUT_MS}ms` }, new Date()),
  );
  return {
    names,
    daily,
    unordered: new Set([obfuscated]),
    ungranted: new Set([obfuscated, snowflake, gapless]),
    gapless,
    snowflake,
    ...(midnightName && { midnight: midnightName }),
    zones: dailyZones,
  };
}
