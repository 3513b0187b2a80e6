/**
 * `npx tsx test/bench/obfuscation.ts [--count 10000000] [--digits 12] [--key-bytes 32]`: obfuscated
 * values (src/sequences/obfuscation) without services.
 *
 *  1. Throughput, values a second (wall clock, and per CPU second: the machine is shared): encode one
 *     value at a time, encodeAll in batches of 1000 (a large formatted reply) and 4096, decodeAll.
 *  2. Collisions: the values of serials 0 to count - 1 (10^7 by default) under one key, sorted as
 *     numbers and compared neighbour to neighbour; every 1000th decoded back. Prints the duplicates
 *     found (0, or the run fails), the width and version checks, and the time it took.
 */
import { randomBytes } from "node:crypto";
import { ObfuscatedDomain } from "../../src/sequences/obfuscation/domain.js";
import { num, unknownFlags } from "./args.js";

const unknown = unknownFlags(["count", "digits", "key-bytes"]);
if (unknown.length > 0) throw new Error(`unknown flags: ${unknown.join(" ")}`);
const COUNT = num("count", 10_000_000);
const DIGITS = num("digits", 12);
const KEY_BYTES = num("key-bytes", 32);
// The collision check keeps values as doubles: exact for the 15 digits after the version of 16-digit values.
if (DIGITS > 16) throw new Error("--digits: at most 16 here");
const say = (s: string) => process.stdout.write(`${s}\n`);

const domain = new ObfuscatedDomain({
  digits: DIGITS,
  keys: new Map([[1, randomBytes(KEY_BYTES)]]),
  currentVersion: 1,
  tweak: Buffer.from("bench"),
});
const serials = (from: number, count: number) => Array.from({ length: count }, (_, i) => BigInt(from + i));

/** Runs f (which handles `values` values) and prints its rate by the wall clock and by CPU time. */
function rate(label: string, values: number, f: () => void): void {
  f(); // warm up
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  f();
  const wall = Number(process.hrtime.bigint() - start) / 1e9;
  const used = process.cpuUsage(cpu);
  const cpuSeconds = (used.user + used.system) / 1e6;
  say(
    `${label.padEnd(34)} ${Math.round(values / wall)
      .toLocaleString("en")
      .padStart(10)} values/s   ${Math.round(values / cpuSeconds)
      .toLocaleString("en")
      .padStart(10)} values/CPU-s`,
  );
}

say(`obfuscated domain: ${DIGITS} digits (version digit + FF1 over ${DIGITS - 1}), AES-${KEY_BYTES * 8}, node ${process.version}`);
const SINGLE = 100_000;
const BATCHED = 1_000_000;
let sink = 0;
rate("encode, one at a time", SINGLE, () => {
  for (let i = 0; i < SINGLE; i++) sink += domain.encode(BigInt(i)).length;
});
for (const batch of [1000, 4096]) {
  const inputs = Array.from({ length: BATCHED / batch }, (_, k) => serials(k * batch, batch));
  rate(`encodeAll, batches of ${batch}`, BATCHED, () => {
    for (const input of inputs) sink += domain.encodeAll(input).length;
  });
}
const encoded = Array.from({ length: BATCHED / 4096 }, (_, k) => domain.encodeAll(serials(k * 4096, 4096)));
rate("decodeAll, batches of 4096", BATCHED - (BATCHED % 4096), () => {
  for (const values of encoded) sink += domain.decodeAll(values).length;
});
rate("decode, one at a time", SINGLE, () => {
  for (let i = 0; i < SINGLE; i++) sink += Number(domain.decode(encoded[(i >> 12) % encoded.length]?.[i & 4095] as string).version);
});

say(`\ncollisions: serials 0 to ${(COUNT - 1).toLocaleString("en")}`);
const started = process.hrtime.bigint();
const values = new Float64Array(COUNT);
const CHUNK = 100_000;
let malformed = 0;
let misdecoded = 0;
const shape = new RegExp(`^1[0-9]{${DIGITS - 1}}$`);
for (let from = 0; from < COUNT; from += CHUNK) {
  const batch = domain.encodeAll(serials(from, Math.min(CHUNK, COUNT - from)));
  batch.forEach((v, i) => {
    if (!shape.test(v)) malformed++;
    values[from + i] = Number(v.slice(1));
  });
  const sample = batch.filter((_, i) => i % 1000 === 0);
  domain.decodeAll(sample).forEach((d, k) => {
    if (d.serial !== BigInt(from + k * 1000)) misdecoded++;
  });
}
const encodedAt = process.hrtime.bigint();
values.sort();
let duplicates = 0;
for (let i = 1; i < COUNT; i++) if (values[i] === values[i - 1]) duplicates++;
const seconds = (t: bigint) => Number(t - started) / 1e9;
say(
  `encoded ${COUNT.toLocaleString("en")} values in ${seconds(encodedAt).toFixed(1)} s (${Math.round(COUNT / seconds(encodedAt)).toLocaleString("en")} values/s, checks included)`,
);
say(
  `duplicates: ${duplicates}   malformed: ${malformed}   misdecoded (every 1000th checked): ${misdecoded}   total ${seconds(process.hrtime.bigint()).toFixed(1)} s`,
);
say(`(checksum ${sink})`);
if (duplicates + malformed + misdecoded > 0) process.exitCode = 1;
