/** Small helpers for tests that look at issued numbers. */
import type { IddError } from "../../src/core/errors.js";
import type { Range } from "../../src/core/range.js";

/** Every number of `ranges`, in order. */
export const numbers = (ranges: Range[]): bigint[] =>
  ranges.flatMap((r) => Array.from({ length: Number(r.last - r.first + 1n) }, (_, i) => r.first + BigInt(i)));

/** The error `p` rejects with, or undefined when it resolves. */
export const failure = (p: Promise<unknown>): Promise<IddError | undefined> =>
  p.then(
    () => undefined,
    (e: unknown) => e as IddError,
  );
