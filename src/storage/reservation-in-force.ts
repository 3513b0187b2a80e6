/**
 * The reservation in force of a counter — a (sequence, period) — read from its append-only records
 * in MongoDB's `reservations`: the highest max recorded (what Redis may hand out up to, I1) and the
 * highest epoch recorded (the fence claims must present, I5). Appends never lose each other, so this
 * holds without an atomic read-modify-write. One fold, used by the store, replay and `idd seq show`.
 */
export interface InForce {
  max: bigint;
  epoch: number;
}

/** The reservation in force once `record` is counted too (`was`: before it; undefined when none). */
export function inForce(was: InForce | undefined, record: InForce): InForce {
  return { max: was && was.max > record.max ? was.max : record.max, epoch: Math.max(was?.epoch ?? 0, record.epoch) };
}
