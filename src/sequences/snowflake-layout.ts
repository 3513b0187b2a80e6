/**
 * The bit layout of one snowflake sequence: an id is `time | worker | seq`, time counted in units
 * of `unitMs` since `epochMs`. At most 63 bits in all, so every id is a positive signed 64-bit
 * integer (a Java/Kafka long). Ids are bigints everywhere: above 2^53 a JavaScript number rounds.
 */

export interface SnowflakeLayout {
  /** The instant time 0 stands for, Unix ms. */
  readonly epochMs: number;
  /** The length of one time unit, ms. */
  readonly unitMs: number;
  readonly timeBits: number;
  readonly workerBits: number;
  readonly seqBits: number;
}

/** A layout as given: `epoch` is Unix ms or an ISO 8601 date-time; everything else may be left out. */
export interface LayoutInput {
  epoch?: unknown;
  unitMs?: unknown;
  timeBits?: unknown;
  workerBits?: unknown;
  seqBits?: unknown;
}

export const LAYOUT_DEFAULTS = { unitMs: 1, timeBits: 41, workerBits: 10, seqBits: 12 } as const;

/** The bits of a positive signed long. */
export const MAX_TOTAL_BITS = 63;
/** Leasing scans the worker ids in one Lua script: 65536 ids at most. */
export const MAX_WORKER_BITS = 16;
/** Longer units make a restarted worker wait up to a unit before its id's bound is behind it. */
export const MAX_UNIT_MS = 1000;
/** Names a layout text may use, lower-cased, for LayoutInput fields. */
const NAMES: Record<string, keyof LayoutInput> = {
  epoch: "epoch",
  unitms: "unitMs",
  unit: "unitMs",
  timebits: "timeBits",
  time: "timeBits",
  workerbits: "workerBits",
  worker: "workerBits",
  seqbits: "seqBits",
  seq: "seqBits",
};

/** `epoch=2026-01-01T00:00:00Z,timeBits=41,…` (short names time=, worker=, seq=, unit= too). */
export function parseLayout(text: string, problems: string[]): LayoutInput {
  const out: Record<string, unknown> = {};
  for (const part of text
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "")) {
    const eq = part.indexOf("=");
    const name = NAMES[part.slice(0, eq).trim().toLowerCase()];
    if (eq < 0 || !name) {
      problems.push(`layout: "${part.slice(0, 40)}" is not one of epoch=, unitMs=, timeBits=, workerBits=, seqBits=`);
      continue;
    }
    const v = part.slice(eq + 1).trim();
    out[name] = name === "epoch" && !/^\d+$/.test(v) ? v : Number(v);
  }
  return out as LayoutInput;
}

/** The largest JavaScript date, ms: a layout's time field must run out before it. */
const MAX_DATE_MS = 8.64e15;
const YEAR_MS = 365 * 24 * 3600 * 1000;

export interface ValidateOptions {
  /** Now, Unix ms (the epoch must not be later). */
  now?: number;
  /** The time field must last at least this long from now (default one year). */
  minLifetimeMs?: number;
}

/** Checks a layout, listing every problem at once; the layout (frozen, defaults filled in) when there are none. */
export function validateLayout(input: LayoutInput, options: ValidateOptions = {}): { layout?: SnowflakeLayout; problems: string[] } {
  const now = options.now ?? Date.now();
  const minLifetimeMs = options.minLifetimeMs ?? YEAR_MS;
  const problems: string[] = [];
  const known = new Set(["epoch", "unitMs", "timeBits", "workerBits", "seqBits"]);
  for (const k of Object.keys(input)) if (!known.has(k)) problems.push(`unknown layout setting "${k}" (known: ${[...known].join(", ")})`);

  const int = (name: keyof typeof LAYOUT_DEFAULTS, min: number, max: number): number => {
    const v = input[name] ?? LAYOUT_DEFAULTS[name];
    if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
      problems.push(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
      return Number.NaN;
    }
    return v;
  };
  const unitMs = int("unitMs", 1, MAX_UNIT_MS);
  const timeBits = int("timeBits", 1, MAX_TOTAL_BITS);
  const workerBits = int("workerBits", 0, MAX_WORKER_BITS);
  const seqBits = int("seqBits", 0, MAX_TOTAL_BITS);
  const epochMs = epochOf(input.epoch, now, problems);

  const total = timeBits + workerBits + seqBits;
  if (total > MAX_TOTAL_BITS)
    problems.push(
      `timeBits + workerBits + seqBits is ${total}; at most ${MAX_TOTAL_BITS}, so that ids stay positive signed 64-bit integers`,
    );
  if (Number.isFinite(unitMs) && Number.isFinite(timeBits) && Number.isFinite(epochMs)) {
    const end = epochMs + 2 ** timeBits * unitMs;
    if (end > MAX_DATE_MS) {
      const most = Math.floor(Math.log2((MAX_DATE_MS - epochMs) / unitMs));
      problems.push(
        `timeBits ${timeBits} with unitMs ${unitMs} outlasts the year 275760 (the largest JavaScript date); use at most ${most}`,
      );
    } else if (end <= now + minLifetimeMs) {
      const when = new Date(end).toISOString();
      problems.push(
        end <= now
          ? `the time field ran out at ${when}: use a later epoch, more timeBits or a longer unitMs`
          : `the time field runs out at ${when}, less than ${Math.round(minLifetimeMs / 86_400_000)} days from now: use a later epoch, more timeBits or a longer unitMs`,
      );
    }
  }
  if (problems.length > 0) return { problems };
  return { layout: Object.freeze({ epochMs, unitMs, timeBits, workerBits, seqBits }), problems };
}

function epochOf(v: unknown, now: number, problems: string[]): number {
  if (v === undefined || v === null) {
    problems.push("epoch is required: the instant time 0 stands for (Unix ms, or an ISO 8601 date-time such as 2026-01-01T00:00:00Z)");
    return Number.NaN;
  }
  let ms = Number.NaN;
  if (typeof v === "number") ms = v;
  else if (typeof v === "string" && /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2}))?$/.test(v)) ms = Date.parse(v);
  if (!Number.isSafeInteger(ms) || ms < 0) {
    problems.push(`epoch must be Unix ms (an integer >= 0) or an ISO 8601 date-time with a zone, got ${JSON.stringify(v)}`);
    return Number.NaN;
  }
  if (ms > now) {
    problems.push(`epoch ${new Date(ms).toISOString()} is in the future: no id could be issued before it`);
    return Number.NaN;
  }
  return ms;
}

/** The largest value of each field. */
export function fieldMax(layout: SnowflakeLayout): { time: number; worker: number; seq: number } {
  return { time: 2 ** layout.timeBits - 1, worker: 2 ** layout.workerBits - 1, seq: 2 ** layout.seqBits - 1 };
}

/** The first instant the time field cannot hold: no id can be issued from then on. */
export function runsOutAt(layout: SnowflakeLayout): Date {
  return new Date(layout.epochMs + 2 ** layout.timeBits * layout.unitMs);
}

/** The time unit an instant (Unix ms) falls in; negative before the epoch. */
export function unitAt(layout: SnowflakeLayout, ms: number): number {
  return Math.floor((ms - layout.epochMs) / layout.unitMs);
}

/** The instant (Unix ms) a time unit starts at: the time an id of that unit was issued at. */
export function unitStart(layout: SnowflakeLayout, unit: number): number {
  return layout.epochMs + unit * layout.unitMs;
}

/**
 * The id of (time, worker, seq). `time` is a Date (its unit is taken) or the time field itself (units
 * since the epoch). Throws RangeError when a field does not fit the layout.
 */
export function compose(layout: SnowflakeLayout, parts: { time: number | Date; worker: number; seq: number }): bigint {
  const time = parts.time instanceof Date ? unitAt(layout, parts.time.getTime()) : parts.time;
  const max = fieldMax(layout);
  const check = (name: string, v: number, top: number) => {
    if (!Number.isSafeInteger(v) || v < 0 || v > top) throw new RangeError(`snowflake ${name} ${v} is outside 0..${top}`);
  };
  check("time", time, max.time);
  check("worker", parts.worker, max.worker);
  check("seq", parts.seq, max.seq);
  return (
    (BigInt(time) << BigInt(layout.workerBits + layout.seqBits)) | (BigInt(parts.worker) << BigInt(layout.seqBits)) | BigInt(parts.seq)
  );
}

/**
 * The fields of an id. Takes a bigint or its decimal string; a number only when it is a safe integer
 * (a larger one has already been rounded, and its fields would be wrong). Throws RangeError otherwise.
 */
export function decompose(
  layout: SnowflakeLayout,
  id: bigint | string | number,
): { time: Date; units: number; worker: number; seq: number } {
  let v: bigint;
  if (typeof id === "bigint") v = id;
  else if (typeof id === "string" && /^\d+$/.test(id)) v = BigInt(id);
  else if (typeof id === "number" && Number.isSafeInteger(id)) v = BigInt(id);
  else throw new RangeError(`${String(id)} is not an id: pass a bigint or a decimal string (numbers above 2^53 are rounded)`);
  const total = layout.timeBits + layout.workerBits + layout.seqBits;
  if (v < 0n || v >= 1n << BigInt(total)) throw new RangeError(`${v} is outside the layout's ${total} bits`);
  const seq = Number(v & ((1n << BigInt(layout.seqBits)) - 1n));
  const worker = Number((v >> BigInt(layout.seqBits)) & ((1n << BigInt(layout.workerBits)) - 1n));
  const units = Number(v >> BigInt(layout.workerBits + layout.seqBits));
  return { time: new Date(unitStart(layout, units)), units, worker, seq };
}
