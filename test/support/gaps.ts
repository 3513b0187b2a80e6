/**
 * G4 (bounded gaps), checked against MongoDB's audit log. A number is skipped only when
 * - it lies in a block granted to some worker and never issued (the grant is in MongoDB), or
 * - a worker was SIGKILLed before its grants were appended: at most its two unissued blocks
 *   (current and prefetched), so at most 2 × the counter's largest block, and only when the
 *   number after the gap was issued in a phase that killed a worker, or
 * - replay fell back to the reservation after Redis lost its state: the skipped numbers end at a
 *   recorded reservation max and span at most the headroom right after a raise plus two blocks,
 *   only when the number after the gap was issued in a Redis-loss phase. A raise comes when the
 *   headroom covers less than IDD_RESERVE_LOW_MS of consumption (or two blocks) and adds
 *   IDD_RESERVE_AHEAD_MS' worth (at least four blocks), so the headroom it leaves is at most
 *   (1 + `lowShare`) steps, `lowShare` = max(low / ahead, 1/2).
 * When the number after a gap was issued is known only up to its request's flight: from the phase
 * its request was sent in (`phase`) to the phase its reply arrived in (`lastPhase`, default the
 * same). A request sent just before a SIGKILL and answered by the victim's successor ends a gap the
 * kill made, in the phase after the one it was sent in.
 * Anything else is a violation.
 */
export interface GapRange {
  first: bigint;
  last: bigint;
}

export interface CounterAudit {
  grants: GapRange[];
  /** Every reservation max workers recorded for the counter (not replay's own records). */
  reservationMaxima: bigint[];
}

export interface GapPhases {
  names: string[];
  /** Phases in which a worker was SIGKILLed. */
  kills: Set<number>;
  /** Phases in which Redis lost its state and replay ran. */
  redisLosses: Set<number>;
}

/** The workers' IDD_RESERVE_LOW_MS and IDD_RESERVE_AHEAD_MS. */
export interface ReserveSettings {
  lowMs: number;
  aheadMs: number;
}

export interface GapCheck {
  /** Largest block granted (the block bound is twice this). */
  largestBlock: bigint;
  /** Largest raise between two reservations. */
  largestReservationStep: bigint;
  /** The most headroom a raise leaves: what a restore may skip above the last grant. */
  headroomBound: bigint;
  /** Numbers skipped outside any grant, by cause. */
  unlogged: { killed: bigint; replay: bigint };
  violations: string[];
}

/**
 * `issued`: every range issued for one counter, each with the phase its request was sent in and,
 * when later, the phase its reply arrived in; in any order.
 */
export function checkGaps(
  counter: string,
  issued: (GapRange & { phase: number; lastPhase?: number })[],
  audit: CounterAudit,
  phases: GapPhases,
  reserve: ReserveSettings,
): GapCheck {
  const grants = mergeRanges(audit.grants);
  const maxima = [...new Set(audit.reservationMaxima)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  let largestBlock = 0n;
  for (const g of audit.grants) if (g.last - g.first + 1n > largestBlock) largestBlock = g.last - g.first + 1n;
  let largestReservationStep = 0n;
  for (let i = 1; i < maxima.length; i++) {
    const step = (maxima[i] as bigint) - (maxima[i - 1] as bigint);
    if (step > largestReservationStep) largestReservationStep = step;
  }
  // In thousandths, to stay in bigint: a raise may start from lowShare steps of headroom.
  const lowShare = BigInt(Math.max(500, Math.ceil((1000 * reserve.lowMs) / reserve.aheadMs)));
  const headroomBound = (largestReservationStep * (1000n + lowShare)) / 1000n + 2n * largestBlock;
  const check: GapCheck = { largestBlock, largestReservationStep, headroomBound, unlogged: { killed: 0n, replay: 0n }, violations: [] };
  const sorted = [...issued].sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
  let prevLast: bigint | undefined;
  for (const x of sorted) {
    if (prevLast !== undefined && x.first > prevLast + 1n) {
      for (const u of uncovered({ first: prevLast + 1n, last: x.first - 1n }, grants)) {
        const size = u.last - u.first + 1n;
        const last = Math.max(x.phase, x.lastPhase ?? x.phase);
        const name = (i: number) => phases.names[i] ?? `phase ${i}`;
        const where = last === x.phase ? name(x.phase) : `${name(x.phase)}..${name(last)}`;
        const during = (set: Set<number>) => [...set].some((i) => i >= x.phase && i <= last);
        if (during(phases.redisLosses) && maxima.includes(u.last) && size <= headroomBound) {
          check.unlogged.replay += size;
        } else if (during(phases.kills) && size <= 2n * largestBlock) {
          check.unlogged.killed += size;
        } else {
          check.violations.push(
            `${counter}: ${u.first}..${u.last} (${size} numbers) skipped in ${where} were never granted, and neither a killed worker's blocks (≤ ${2n * largestBlock}) nor replay headroom (ending at a reservation, ≤ ${headroomBound}) explains them`,
          );
        }
      }
    }
    if (prevLast === undefined || x.last > prevLast) prevLast = x.last;
  }
  return check;
}

function mergeRanges(ranges: GapRange[]): GapRange[] {
  const sorted = [...ranges].sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
  const out: GapRange[] = [];
  for (const r of sorted) {
    const prev = out.at(-1);
    if (prev && r.first <= prev.last + 1n) {
      if (r.last > prev.last) prev.last = r.last;
    } else out.push({ ...r });
  }
  return out;
}

/** The parts of `gap` outside every (merged, sorted) grant. */
function uncovered(gap: GapRange, grants: GapRange[]): GapRange[] {
  const out: GapRange[] = [];
  let from = gap.first;
  // First grant that ends at or after the gap's start (binary search).
  let lo = 0;
  let hi = grants.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((grants[mid] as GapRange).last < gap.first) lo = mid + 1;
    else hi = mid;
  }
  for (let i = lo; i < grants.length && from <= gap.last; i++) {
    const g = grants[i] as GapRange;
    if (g.first > gap.last) break;
    if (g.first > from) out.push({ first: from, last: g.first - 1n });
    if (g.last + 1n > from) from = g.last + 1n;
  }
  if (from <= gap.last) out.push({ first: from, last: gap.last });
  return out;
}
