/**
 * Months of history for `npm run bench:tenants` (issue #32), written through the store's own
 * appends, as workers write them: over 1,000 sequences (`hist-<i>`, every tenth gapless), their
 * reservation records (one per ten blocks), `grants` block grants of 100 numbers, `samples`
 * consumption samples spread over the retention's last days, and `gaplessNumbers` gapless numbers,
 * 1 in 25 voided, the rest confirmed but each counter's newest 1% left pending (older pending ones
 * the sweep would have voided), then counted once, as the sweeps of a running pool would have
 * moved their checkpoints up.
 */
import { defineSequence } from "../../src/sequences/definition.js";
import type { Grant } from "../../src/storage/grants.js";
import type { Sample } from "../../src/storage/samples.js";
import type { Store } from "../../src/storage/store.js";

export interface HistorySize {
  grants: number;
  samples: number;
  gaplessNumbers: number;
}

const SEQUENCES = 1000;
const BLOCK = 100n;
/** Records per append. */
const CHUNK = 5000;
const DAY_MS = 86_400_000;

export const historyName = (i: number) => `hist-${i}`;
/** Every tenth history sequence is gapless. */
const isGapless = (i: number) => i % 10 === 9;
const counterNames = Array.from({ length: SEQUENCES }, (_, i) => i).filter((i) => !isGapless(i));
const gaplessNames = Array.from({ length: SEQUENCES }, (_, i) => i).filter(isGapless);

async function chunked<T>(n: number, make: (i: number) => T, write: (items: T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < n; i += CHUNK) await write(Array.from({ length: Math.min(CHUNK, n - i) }, (_, j) => make(i + j)));
}

/** Writes the history; `say` hears each collection's count and time. */
export async function preloadHistory(store: Store, size: HistorySize, say: (s: string) => void): Promise<void> {
  const now = Date.now();
  const ago = (i: number, n: number) => new Date(now - 90 * DAY_MS + Math.floor((i / n) * 90 * DAY_MS));
  const timed = async (what: string, work: () => Promise<void>) => {
    const t = performance.now();
    await work();
    say(`history: ${what} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  };
  await store.createSequences(
    Array.from({ length: SEQUENCES }, (_, i) =>
      defineSequence({ name: historyName(i), gapless: isGapless(i) }, new Date(now - 91 * DAY_MS)),
    ),
  );
  // Grant k of a counter sequence is its k-th block, numbers 1 + 100k .. 100(k+1); a reservation every ten.
  const grantOf = (i: number): Grant => {
    const s = counterNames[i % counterNames.length] as number;
    const k = BigInt(Math.floor(i / counterNames.length));
    return {
      claim: `hist-${i}`,
      sequence: historyName(s),
      period: null,
      first: 1n + BLOCK * k,
      last: BLOCK * (k + 1n),
      epoch: 1,
      worker: "w-old",
      at: ago(i, size.grants),
    };
  };
  const reservations = Math.ceil(size.grants / 10);
  await timed(`${reservations} reservation records`, () =>
    chunked(
      reservations,
      (i) => ({
        sequence: historyName(counterNames[i % counterNames.length] as number),
        period: null,
        max: BLOCK * 10n * BigInt(Math.floor(i / counterNames.length) + 1),
        epoch: 1,
        worker: "w-old",
      }),
      (rs) => store.appendReservations(rs),
    ),
  );
  await timed(`${size.grants} grants`, () => chunked(size.grants, grantOf, (gs) => store.appendGrants(gs)));
  // Samples within the retention (7 days by default), as a pool that deletes older days keeps them.
  const sampleOf = (i: number): Sample => ({
    sequence: historyName(i % SEQUENCES),
    period: null,
    issued: 500,
    windowMs: 10_000,
    worker: "w-old",
    at: new Date(now - 6 * DAY_MS + Math.floor((i / size.samples) * 6 * DAY_MS)),
  });
  await timed(`${size.samples} samples`, () => chunked(size.samples, sampleOf, (ss) => store.appendSamples(ss)));
  await timed(`${size.gaplessNumbers} gapless numbers`, async () => {
    const each = Math.ceil(size.gaplessNumbers / gaplessNames.length);
    const pendingFrom = BigInt(each - Math.ceil(each / 100));
    for (const s of gaplessNames) await store.registerGaplessCounter(historyName(s), null, 1n);
    // Ten sequences at a time, a hundred numbers per write, settled as they would have been.
    for (let g = 0; g < gaplessNames.length; g += 10)
      await Promise.all(
        gaplessNames.slice(g, g + 10).map(async (s) => {
          const sequence = historyName(s);
          for (let n = 0; n < each; n += 100) {
            const numbers = Array.from({ length: Math.min(100, each - n) }, (_, j) => BigInt(n + j + 1));
            const issuedAt = ago(n, each);
            const expiresAt = new Date(now + 3_600_000);
            await store.insertGapless(
              numbers.map((number) => ({
                sequence,
                period: null,
                number,
                requestId: `r-${s}-${number}`,
                worker: "w-old",
                issuedAt,
                expiresAt,
              })),
            );
            const at = new Date(issuedAt.getTime() + 1000);
            const settled = numbers.filter((x) => x <= pendingFrom);
            const confirmed = settled.filter((x) => x % 25n !== 0n);
            const voided = settled.filter((x) => x % 25n === 0n);
            await store.settleGapless({ sequence, period: null, numbers: confirmed }, "confirmed", null, at, "w-old");
            await store.settleGapless({ sequence, period: null, numbers: voided }, "voided", "voided", at, "w-old");
          }
        }),
      );
  });
  await timed("the gapless counts brought up to date", async () => {
    await store.gaplessCounts();
  });
}
