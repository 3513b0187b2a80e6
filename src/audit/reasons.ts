/**
 * Why a number of a series was not answered to a client, as `idd audit` reports it: one row per
 * reason, each with what in MongoDB's log shows it.
 */
export const REASONS = {
  "given-up": {
    explained: true,
    doc: "in a block granted to a worker and never answered (G4); the evidence is the grant and why, from the worker's release record: its partition went elsewhere, the topic grew, it was fenced or its batch was, a batch failed before it was sent, a retry got its first answer, the definition changed, the period ended, it stopped (src/storage/releases.ts) — or no release, when the worker died",
  },
  "abandoned-claim": {
    explained: true,
    doc: "claimed from Redis by a worker that stopped (or lost MongoDB) before it recorded the block's grant, so none of it was issued; the counter's next claim recorded it from Redis (the abandoned claim record, with the claimant, is the evidence)",
  },
  "replay-headroom": {
    explained: true,
    doc: "reserved but never granted: a replay rebuilt the counter at its reservation (the reservation record that started the new epoch is the evidence), jumping over the headroom Redis had not granted yet",
  },
  voided: {
    explained: true,
    doc: "a gapless sequence's number voided with a reason (the client's, or `expired` by the sweep when it was neither confirmed nor voided in time); its settlement is the evidence",
  },
  pending: {
    explained: true,
    doc: "a gapless sequence's number issued and not settled yet: it is confirmed or voided within its confirm timeout, or voided `expired` by the next sweep after it",
  },
  unexplained: {
    explained: false,
    doc: "in no grant and in no replay's headroom: nothing in MongoDB's log says where these numbers went",
  },
} as const;

export type Reason = keyof typeof REASONS;
export const REASON_NAMES = Object.keys(REASONS) as Reason[];

/** Numbers and ranges per reason, all zero. */
export const noGaps = (): Record<Reason, { ranges: number; numbers: bigint }> =>
  Object.fromEntries(REASON_NAMES.map((r) => [r, { ranges: 0, numbers: 0n }])) as Record<Reason, { ranges: number; numbers: bigint }>;
