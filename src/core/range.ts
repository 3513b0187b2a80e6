/** A run of consecutive numbers, `first` to `last` inclusive: how idd hands out, records and replies with numbers. */
export interface Range {
  first: bigint;
  last: bigint;
}

/** Numbers in the order given as ranges: consecutive ones (each one more than the last) share a range. */
export function toRanges(numbers: readonly bigint[]): Range[] {
  const out: Range[] = [];
  let r: Range | undefined;
  for (const n of numbers) {
    if (r && n === r.last + 1n) r.last = n;
    else {
      r = { first: n, last: n };
      out.push(r);
    }
  }
  return out;
}
