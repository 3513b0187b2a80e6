/**
 * `npx tsx test/bench/audit.ts [--seconds 3] [--batch 50]`: what recording answers for `idd audit`
 * costs. One in-process dispenser on real Redis and MongoDB answers batches of `--batch` one-number
 * requests of a plain and of an audited sequence, in turns within one run; prints numbers/s of each,
 * their ratio, and the issuance records' bytes per number (BSON, as MongoDB stores them).
 */
import { BSON } from "mongodb";
import { defineSequence } from "../../src/sequences/definition.js";
import { benchServices } from "../support/bench-services.js";
import { beat, DispenserRig, request } from "../support/dispenser-rig.js";
import { num } from "./args.js";

const say = (s: string) => process.stdout.write(`${s}\n`);
const seconds = num("seconds", 3);
const batch = num("batch", 50);
const { services, stop } = await benchServices(say);
const rig = new DispenserRig(services, "audit_bench");
const plain = "bench-plain";
const audited = "bench-audited";
await rig.store.ensureIndexes();
await rig.store.createSequence(defineSequence({ name: plain, grantLog: "strict" }, new Date()));
await rig.store.createSequence(defineSequence({ name: audited, audit: true }, new Date()));
const { d } = rig.dispenser({ allocation: { minBlock: 1000, initialBlock: 10_000, maxBlock: 100_000, minReservation: 1_000_000 } });

async function rate(sequence: string, ms: number): Promise<number> {
  let numbers = 0;
  const t0 = performance.now();
  while (performance.now() < t0 + ms) {
    const replies = await d.answer(
      0,
      Array.from({ length: batch }, () => request(sequence, 1)),
      beat,
    );
    numbers += replies.filter((r) => r.status === "OK").length;
  }
  return numbers / ((performance.now() - t0) / 1000);
}

await rate(plain, 300); // warm up: blocks claimed, definitions cached
await rate(audited, 300);
const rates = { plain: [] as number[], audited: [] as number[] };
for (let turn = 0; turn < 3; turn++) {
  rates.plain.push(await rate(plain, (seconds * 1000) / 3));
  rates.audited.push(await rate(audited, (seconds * 1000) / 3));
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const records = await rig.queries.collection("issuance").find({ sequence: audited }).toArray();
const bytes = records.reduce((n, r) => n + BSON.calculateObjectSize(r), 0);
const answered = records.reduce((n, r) => n + Number(BigInt(r.last) - BigInt(r.first) + 1n), 0);
say(`batches of ${batch} one-number requests, ${seconds} s per sequence in 3 turns (node ${process.version})`);
say(`plain (strict grant log)   ${mean(rates.plain).toFixed(0).padStart(8)} numbers/s`);
say(`audited                    ${mean(rates.audited).toFixed(0).padStart(8)} numbers/s`);
say(`audited / plain            ${(mean(rates.audited) / mean(rates.plain)).toFixed(2)}`);
say(
  `issuance: ${records.length} records for ${answered} numbers, ${(bytes / records.length).toFixed(0)} B per record, ${(bytes / answered).toFixed(2)} B per number`,
);
await rig.close();
await stop();
