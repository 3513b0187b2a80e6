/** A run of consecutive numbers, `first` to `last` inclusive: how idd hands out, records and replies with numbers. */
export interface Range {
  first: bigint;
  last: bigint;
}
