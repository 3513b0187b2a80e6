/**
 * The walk of one gapless counter (`idd audit` of a sequence defined `--gapless`): its numbers come
 * from MongoDB one document each (src/storage/gapless.ts), so the series runs from the counter's
 * start to its highest number, and every number in it is confirmed (answered), voided with its
 * reason, pending within its confirm timeout (or voided by the next sweep), or — when its document
 * is missing — unexplained. Streamed: memory holds one range at a time.
 */
import type { GaplessEntry } from "../storage/gapless.js";
import type { Window } from "../storage/windows.js";
import { noGaps } from "./reasons.js";
import type { Gap, Tally } from "./walk.js";

/** What an evidence line says after the number's id (`<id>: <reason or expiry>`): ids hold no ": ". */
const detail = (evidence: string | null) => evidence?.slice(evidence.indexOf(": ") + 2);

export async function walkGapless(
  entries: AsyncIterable<GaplessEntry>,
  start: bigint,
  window: Window | undefined,
  onGap: (g: Gap) => void | Promise<void>,
  onProgress?: (at: bigint) => void,
): Promise<Tally> {
  const tally: Tally = { answered: 0n, unproven: 0n, gaps: noGaps() };
  const from = window?.from ?? start;
  const to = window?.to;
  const inWindow = (n: bigint) => n >= from && (to === undefined || n <= to);
  let open: Gap | undefined;
  const close = async () => {
    if (!open) return;
    const t = tally.gaps[open.reason];
    t.ranges++;
    t.numbers += open.last - open.first + 1n;
    await onGap(open);
    open = undefined;
  };
  // Numbers of one reason (and, for voided ones, one reason text and worker) join into one range.
  const note = async (n: bigint, g: Omit<Gap, "first" | "last"> | undefined) => {
    if (!inWindow(n)) return;
    tally.first ??= n;
    tally.last = n;
    if (g === undefined) {
      await close();
      tally.answered++;
      return;
    }
    if (
      open &&
      open.reason === g.reason &&
      open.last + 1n === n &&
      open.worker === g.worker &&
      detail(open.evidence) === detail(g.evidence)
    ) {
      open.last = n;
      return;
    }
    await close();
    open = { ...g, first: n, last: n };
  };
  let next = start;
  for await (const e of entries) {
    if (to !== undefined && next > to) break;
    onProgress?.(e.number);
    for (; next < e.number; next++) await note(next, { reason: "unexplained", worker: null, at: null, evidence: null });
    if (e.number < next) continue; // below the start (a definition's start cannot change; defensive)
    if (e.state === "confirmed") await note(e.number, undefined);
    else if (e.state === "voided")
      await note(e.number, { reason: "voided", worker: e.by, at: e.at, evidence: `${e.id}: ${e.reason ?? ""}` });
    else await note(e.number, { reason: "pending", worker: e.by, at: e.at, evidence: `${e.id}: expires ${e.expiresAt.toISOString()}` });
    next = e.number + 1n;
  }
  await close();
  return tally;
}
