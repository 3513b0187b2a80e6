/**
 * Why a number of a series was not answered to a client, as `idd audit` reports it: one row per
 * reason, each with what in MongoDB's log shows it. The log does not record why a worker gave a
 * block up; the grant's worker and time lead to that worker's log (`droppedNumbers`).
 */
export const REASONS = {
  "given-up": {
    explained: true,
    doc: "in a block granted to a worker (the grant is the evidence) and never answered: the worker died, stopped or lost its partition, its batch was fenced or failed, the request topic grew, or the sequence's definition or period changed (G4)",
  },
  "replay-headroom": {
    explained: true,
    doc: "reserved but never granted: a replay rebuilt the counter at its reservation (the reservation record that started the new epoch is the evidence), jumping over the headroom Redis had not granted yet",
  },
  unexplained: {
    explained: false,
    doc: "in no grant and in no replay's headroom: nothing in MongoDB's log says where these numbers went",
  },
} as const;

export type Reason = keyof typeof REASONS;
export const REASON_NAMES = Object.keys(REASONS) as Reason[];
